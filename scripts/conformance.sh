#!/usr/bin/env bash
# Runs the official MCP conformance suite against `botd mcp --http`.
#
#   scripts/conformance.sh            (or: make conformance)
#
# Builds bin/botd (or uses $BOTD_BIN), serves one throwaway group on a free loopback port with a
# random bearer token, and runs every active server scenario of the pinned
# @modelcontextprotocol/conformance. Scenarios that cannot apply to a
# server without the suite's fixture tools and resources are listed in
# scripts/conformance/baseline.yml; any other failure, or a listed one that
# starts passing, fails the run.
#
# The suite cannot send an Authorization header, so it talks to a small
# loopback proxy (scripts/conformance/authproxy.go) that adds the token and
# passes Host/Origin through untouched. botd itself keeps full auth.
#
# Node 22 and the suite are installed from the npm registry into
# .conformance/ (gitignored; override with CONFORMANCE_DIR) at the exact
# versions of scripts/conformance/package-lock.json. `botd run` is not
# needed: the scenarios botd passes only use initialize, ping, tools/list
# and resources/list.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
TOOLS=${CONFORMANCE_DIR:-$ROOT/.conformance}
PINS=$ROOT/scripts/conformance
# Scenarios botd must pass, checked on top of the suite's own verdict so a
# baseline edit cannot quietly drop one.
REQUIRED=(server-initialize ping tools-list resources-list resources-subscribe resources-unsubscribe dns-rebinding-protection server-sse-multiple-streams)

say() { printf 'conformance: %s\n' "$*" >&2; }

# --- tools -----------------------------------------------------------------
install_tools() {
	mkdir -p "$TOOLS"
	# The stamp is written only after a complete install, so a failed one
	# is retried rather than trusted.
	local stamp=$TOOLS/.installed-lock.json
	if [[ -x $TOOLS/node_modules/.bin/node ]] && cmp -s "$PINS/package-lock.json" "$stamp"; then
		return
	fi
	say "installing Node 22 and the conformance suite into $TOOLS"
	rm -f "$stamp"
	cp "$PINS/package.json" "$PINS/package-lock.json" "$TOOLS/"
	(cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error)
	cp "$PINS/package-lock.json" "$stamp"
}
install_tools
NODE=$TOOLS/node_modules/.bin/node
SUITE=$TOOLS/node_modules/@modelcontextprotocol/conformance/dist/index.js
node_version=$("$NODE" --version)
if [[ $node_version != v22.* ]]; then
	say "expected Node 22 in $TOOLS, got $node_version (did npm skip the node package's install script?)"
	exit 1
fi
suite_version=$("$NODE" "$SUITE" --version)

# --- server ----------------------------------------------------------------
TMP=$(mktemp -d)
pids=()
cleanup() {
	local rc=$?
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BOTD=${BOTD_BIN:-}
if [[ -z $BOTD ]]; then
	say "building bin/botd"
	"$GO" build -o bin/botd ./cmd/botd
	BOTD=bin/botd
fi
"$GO" build -o "$TMP/authproxy" ./scripts/conformance/authproxy.go

BOTD_MCP_TOKEN=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
export BOTD_MCP_TOKEN
cat >"$TMP/config.yaml" <<EOF
data_dir: $TMP/data
groups_dir: $TMP/groups
log_level: info
mcp:
  http:
    tokens: [{token: "\${BOTD_MCP_TOKEN}", group: conformance}]
groups:
  - {folder: conformance, name: Conformance, chat: "telegram:1", main: true}
EOF

# Port 0: the kernel picks a free port, which botd logs as addr=HOST:PORT.
"$BOTD" mcp --http 127.0.0.1:0 --config "$TMP/config.yaml" 2>"$TMP/botd.log" &
pids+=($!)

wait_for() { # wait_for DESCRIPTION COMMAND...: poll up to 10 s
	local what=$1
	shift
	for _ in $(seq 100); do
		if "$@"; then return 0; fi
		sleep 0.1
	done
	say "timed out waiting for $what"
	return 1
}
botd_addr() { sed -n 's/.*serving MCP over Streamable HTTP.* addr=\([^ ]*\).*/\1/p' "$TMP/botd.log" | head -n1; }
has_addr() { [[ -n $(botd_addr) ]]; }
if ! wait_for "botd mcp to listen" has_addr; then
	cat "$TMP/botd.log" >&2
	exit 1
fi
BOTD_ADDR=$(botd_addr)

"$TMP/authproxy" -target "http://$BOTD_ADDR" -addr-file "$TMP/proxy.addr" 2>"$TMP/proxy.log" &
pids+=($!)
wait_for "the auth proxy to listen" test -s "$TMP/proxy.addr"
PROXY_ADDR=$(cat "$TMP/proxy.addr")

# --- suite -----------------------------------------------------------------
RESULTS=$TOOLS/results
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
URL="http://$PROXY_ADDR/mcp"
say "suite $suite_version on Node $node_version against botd at $BOTD_ADDR (via $URL)"
set +e
"$NODE" "$SUITE" server --url "$URL" \
	--expected-failures "$PINS/baseline.yml" -o "$RESULTS" 2>&1 | tee "$TMP/suite.log"
suite_rc=${PIPESTATUS[0]}
set -e

# --- summary ---------------------------------------------------------------
# One line per scenario from the saved checks, then the required ones.
summary_rc=0
"$NODE" - "$RESULTS" "$PINS/baseline.yml" "${REQUIRED[@]}" <<'EOF' || summary_rc=$?
const fs = require('fs'), path = require('path');
const [results, baselineFile, ...required] = process.argv.slice(2);
const na = new Set(fs.readFileSync(baselineFile, 'utf8').split('\n')
  .map(l => l.match(/^\s*-\s*([\w-]+)/)).filter(Boolean).map(m => m[1]));
const seen = {};
for (const d of fs.readdirSync(results)) {
  const m = d.match(/^server-(.+)-\d{4}-\d\d-\d\dT/);
  const f = path.join(results, d, 'checks.json');
  if (!m || !fs.existsSync(f)) continue;
  const checks = JSON.parse(fs.readFileSync(f, 'utf8'));
  const n = s => checks.filter(c => c.status === s).length;
  seen[m[1]] = { ok: n('SUCCESS'), bad: n('FAILURE'), warn: n('WARNING') };
}
let passed = 0, failed = 0, notApplicable = 0;
console.log('\n=== botd MCP conformance ===');
for (const [name, r] of Object.entries(seen).sort()) {
  let verdict;
  if (na.has(name)) { verdict = 'n/a (baseline)'; notApplicable++; }
  else if (r.bad === 0 && r.ok > 0) { verdict = 'PASS'; passed++; }
  else if (r.bad === 0) { verdict = 'pass (no checks applied)'; passed++; }
  else { verdict = 'FAIL'; failed++; }
  console.log(`${verdict.padEnd(26)} ${name}  (${r.ok} ok, ${r.bad} failed, ${r.warn} warnings)`);
}
const missing = required.filter(s => !seen[s] || seen[s].bad > 0 || seen[s].ok === 0);
for (const s of missing) console.log(`required scenario did not pass: ${s}`);
console.log(`conformance: ${passed} passed, ${failed} failed, ${notApplicable} not applicable`);
process.exit(missing.length > 0 ? 1 : 0);
EOF
if ((suite_rc != 0 || summary_rc != 0)); then
	say "FAILED (suite exit $suite_rc); results in $RESULTS; botd log:"
	tail -n 50 "$TMP/botd.log" >&2
	exit 1
fi
say "ok; results in $RESULTS"
