#!/usr/bin/env bash
# What `make test` needs besides Go, installed where it can be and named
# where it cannot, so a fresh clone's `make test` passes without further
# steps or stops at once with the one command to run.
#
#   versitygw (the S3 tests' server)      go install into .tools/bin (module proxy)
#   chromium (the browser tests)          apt-get, when root with apt
#   ffmpeg, ffprobe, pdftoppm (the tests  apt-get, when root with apt
#     of the boxed converters)
#   soffice (doctext's LibreOffice        apt-get, when root with apt: the -nogui
#     corpus test)                          packages without recommends, 102 MB
#                                           to download, 320 MB installed
#   initdb, postgres (the tests on         apt-get, when root with apt
#     Postgres, internal/pgtest)
#   docker-compose (validates             apt-get, when root with apt,
#     compose.yaml, packaging's test)       without its recommends (docker.io)
#   pdftotext, qpdf, gs and the PDFs of   apt-get, when root with apt
#     Debian's manuals (the PDF corpus
#     test, doctext/internal/pdf; ~25 MB)
#
# BOTD_SKIP_BROWSER=1 leaves Chromium out (the browser tests then skip).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-go}
TOOLS=$ROOT/.tools/bin
VERSITYGW=github.com/versity/versitygw/cmd/versitygw@v1.8.0

say() { printf 'testdeps: %s\n' "$*" >&2; }

if [[ ! -x $TOOLS/versitygw ]]; then
	say "installing versitygw into .tools/bin (go install $VERSITYGW)"
	mkdir -p "$TOOLS"
	GOBIN=$TOOLS "$GO" install "$VERSITYGW" || { sleep 5; GOBIN=$TOOLS "$GO" install "$VERSITYGW"; }
fi

# Debian package for each program the tests run.
declare -A pkg=([ffmpeg]=ffmpeg [ffprobe]=ffmpeg [pdftoppm]=poppler-utils [pdftotext]=poppler-utils [qpdf]=qpdf [gs]=ghostscript)
if [[ ${BOTD_SKIP_BROWSER:-} != 1 ]] && [[ -z ${BOTD_CHROMIUM:-} ]]; then
	pkg[chromium]=chromium
fi
missing=()
for prog in "${!pkg[@]}"; do
	command -v "$prog" >/dev/null || missing+=("${pkg[$prog]}")
done
# Debian keeps the server's programs off PATH, in /usr/lib/postgresql/<major>/bin
# (internal/pgtest looks there too).
if ! command -v initdb >/dev/null && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
	missing+=(postgresql)
fi
# Files the tests read, by the package that installs them.
declare -A files=(
	[/usr/share/debian-reference/debian-reference.en.pdf]=debian-reference-en
	[/usr/share/debian-reference/debian-reference.fr.pdf]=debian-reference-fr
	[/usr/share/debian-reference/debian-reference.ja.pdf]=debian-reference-ja
	[/usr/share/debian-reference/debian-reference.zh-cn.pdf]=debian-reference-zh-cn
	[/usr/share/debian-reference/debian-reference.zh-tw.pdf]=debian-reference-zh-tw
	[/usr/share/doc/libtasn1-doc/libtasn1.pdf]=libtasn1-doc
)
for f in "${!files[@]}"; do
	[[ -e $f ]] || missing+=("${files[$f]}")
done
# LibreOffice without its recommends (Java, fonts, help): not needed.
office=()
command -v soffice >/dev/null || office=(libreoffice-calc-nogui libreoffice-writer-nogui libreoffice-impress-nogui)
# docker-compose only validates compose.yaml: not the Docker daemon it recommends.
command -v docker-compose >/dev/null || office+=(docker-compose)
((${#missing[@]} + ${#office[@]})) || exit 0
((${#missing[@]})) && mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
cmds=()
((${#missing[@]})) && cmds+=("apt-get install -y ${missing[*]}")
((${#office[@]})) && cmds+=("apt-get install -y --no-install-recommends ${office[*]}")
aptget() {
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
	fi
}
if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
	if ((${#missing[@]})); then
		say "installing ${missing[*]} (apt-get)"
		aptget "${missing[@]}"
	fi
	if ((${#office[@]})); then
		say "installing ${office[*]} (apt-get, without recommends)"
		aptget --no-install-recommends "${office[@]}"
	fi
	exit 0
fi
say "the tests need ${missing[*]} ${office[*]}; run:  sudo ${cmds[0]}${cmds[1]:+ && sudo ${cmds[1]}}"
say "(or BOTD_SKIP_BROWSER=1 to leave out the browser tests)"
exit 1
