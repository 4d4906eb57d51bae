#!/usr/bin/env bash
# The figures of the code's structure (issue 39): where a network is named
# outside its own package, what `config` imports, who imports the protocol
# packages (ipc, mcp), the methods and internal imports of each service
# answering the media tools, the agent's shape, and with --measure the
# default binary's size and the idle RSS of `botd run` with only the web
# channel (a non-race build, as shipped).
#
#   scripts/structure.sh            the counts (seconds)
#   scripts/structure.sh --measure  the counts, the binary size and idle RSS
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
TAGS=${TAGS:-goolm}
MOD=github.com/botd-dev/botd

# Non-test Go files outside channels/<net>/ that name the network (its
# name in any case, as an identifier, string or comment).
for net in discord matrix slack telegram whatsapp; do
	files=$(git ls-files '*.go' | grep -v '_test\.go$' | grep -v "^channels/$net/" |
		xargs grep -li "$net" | sort || true)
	n=$(printf '%s' "$files" | grep -c . || true)
	printf 'files naming %-9s outside its package: %d\n' "$net" "$n"
	if [[ $net == discord ]]; then
		printf '%s\n' "$files" | sed '/^$/d; s/^/    /'
	fi
done

imports=$($GO list -tags "$TAGS" -f '{{join .Imports "\n"}}' ./config | grep "^$MOD/" || true)
printf 'internal imports of config: %d\n' "$(printf '%s' "$imports" | grep -c . || true)"
printf '%s\n' "$imports" | sed "/^\$/d; s|^$MOD/|    |"

# The services answering the media tools: the methods of each one's type
# (exported or not, in its package's non-test files) and the packages of
# botd its package imports.
for svc in media.Service media/links.Service media/links.Pages media/generation.Service media/sending.Service media/mediahost.Host; do
	pkg=${svc%.*} typ=${svc##*.}
	n=$(git ls-files "$pkg/*.go" | grep -v '_test\.go$' | grep -v "^$pkg/.*/" |
		xargs grep -hE "^func \([a-z]+ \*?$typ\) " | grep -c . || true)
	imps=$($GO list -tags "$TAGS" -f '{{join .Imports "\n"}}' "./$pkg" | grep "^$MOD/" | sed "s|^$MOD/||" || true)
	printf 'methods of %s: %d; internal imports of %s: %d\n' "$svc" "$n" "$pkg" "$(printf '%s' "$imps" | grep -c . || true)"
	printf '    %s\n' "$(printf '%s' "$imps" | tr '\n' ' ')"
done

# The agent's shape (issue 39.4): the methods of *Agent, the fields of
# its Options, the longest parameter list under agent/ (non-test files).
printf 'methods of *Agent: %s\n' "$($GO run scripts/gofigures.go methods agent Agent)"
printf 'fields of agent.Options: %s\n' "$($GO run scripts/gofigures.go fields agent Options)"
printf 'longest parameter list under agent/: %s\n' "$($GO run scripts/gofigures.go params agent)"

# Services speak their own types; protocols only adapt (issue 39.1).
# Packages besides the wiring (cmd/, config) and the protocols themselves (ipc,
# mcp) that import ipc or mcp.
users=$($GO list -tags "$TAGS" -f '{{.ImportPath}} {{join .Imports " "}}' ./... |
	awk -v m="$MOD" '$1 !~ "^"m"/(cmd/|config$|ipc$|mcp$)" && $1 !~ /test$/ { for (i = 2; i <= NF; i++) if ($i == m"/ipc" || $i == m"/mcp") { print $1; break } }' |
	sed "s|^$MOD/||" || true)
printf 'packages importing ipc or mcp (besides the wiring and the protocols): %d\n' "$(printf '%s' "$users" | grep -c . || true)"
printf '%s\n' "$users" | sed '/^$/d; s/^/    /'
gofiles() { find . -name '*.go' ! -name '*_test.go' -not -path './.git/*' "$@"; }
printf 'MetaSavedPath uses (non-test lines): %d\n' "$(gofiles -print0 | xargs -0 grep -h 'MetaSavedPath' | wc -l)"
printf 'files of mcp/ calling box.Register: %d\n' "$(gofiles -path './mcp/*' -print0 | xargs -0 grep -l 'box\.Register(' | wc -l)"
printf 'agent links the MCP server (botd/mcp): %d\n' "$($GO list -tags "$TAGS" -deps ./agent | grep -cx "$MOD/mcp" || true)"
printf 'tools imports ipc or mcp-go: %d\n' "$($GO list -tags "$TAGS" -deps ./tools | grep -cE "^($MOD/ipc|github.com/mark3labs/mcp-go/.*)\$" || true)"

[[ ${1:-} == --measure ]] || exit 0

# What one answered message costs the database, over the real SQLite
# store through a driver that counts (agent's BenchmarkRunRoundTrips).
$GO test -tags "$TAGS" -run '^$' -bench 'RunRoundTrips' -benchtime 50x ./agent/ |
	awk '/^BenchmarkRunRoundTrips/ {sub(/^BenchmarkRunRoundTrips\//, "", $1); sub(/-[0-9]+$/, "", $1);
		printf "database round trips, %s: %s statements, %s transactions\n", $1, $5, $7}'

tmp=$(mktemp -d)
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

$GO build -tags "$TAGS" -o "$tmp/botd" ./cmd/botd
size=$(stat -c %s "$tmp/botd")
printf 'binary size (-tags %s): %d bytes (%.1f MiB)\n' "$TAGS" "$size" "$(echo "$size/1048576" | bc -l)"
# What a package or image ships: pure Go, no symbol tables or DWARF
# (scripts/package.sh's release flags).
CGO_ENABLED=0 $GO build -tags "$TAGS" -trimpath -ldflags "-s -w" -o "$tmp/botd-release" ./cmd/botd
size=$(stat -c %s "$tmp/botd-release")
printf 'release binary size (as packaged): %d bytes (%.1f MiB)\n' "$size" "$(echo "$size/1048576" | bc -l)"

# Only the web channel, on a loopback port the kernel picks, no model.
cat >"$tmp/config.yaml" <<EOF
data_dir: $tmp/data
groups_dir: $tmp/groups
channels:
  web:
    enabled: true
    listen: 127.0.0.1:0
EOF
# Three starts, the median reported: the resident set varies by a
# megabyte or so from start to start.
rsses=()
for i in 1 2 3; do
	rm -rf "$tmp/data" "$tmp/groups"
	: >"$tmp/out"
	"$tmp/botd" run --config "$tmp/config.yaml" >"$tmp/out" 2>&1 &
	pid=$!
	# Wait for the start to finish (the log's "botd running" line), then
	# let the start-up garbage settle before reading the resident set.
	for _ in $(seq 1 600); do
		grep -q 'botd running' "$tmp/out" && break
		kill -0 "$pid" 2>/dev/null || { cat "$tmp/out" >&2; exit 1; }
		sleep 0.1
	done
	grep -q 'botd running' "$tmp/out" || { echo "botd did not start:" >&2; cat "$tmp/out" >&2; exit 1; }
	sleep 5
	# VmRSS, then its anonymous part (the heap, what the process holds)
	# and its file part (the binary's pages, clean and shared, which the
	# kernel may drop), all in kB.
	rsses+=("$(awk '/^(VmRSS|RssAnon|RssFile):/ {printf "%s ", $2}' "/proc/$pid/status")")
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
done
read -r rss anon file < <(printf '%s\n' "${rsses[@]}" | sort -n | sed -n 2p)
printf 'idle RSS of botd run (web channel only): %d kB (%.1f MB): anonymous %d kB, binary pages %d kB (the median of 3 starts)\n' \
	"$rss" "$(echo "$rss/1024" | bc -l)" "$anon" "$file"
