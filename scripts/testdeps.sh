#!/usr/bin/env bash
# What `make test` needs besides Go, installed where it can be and named
# where it cannot, so a fresh clone's `make test` passes without further
# steps or stops at once with the one command to run.
#
#   versitygw (the S3 tests' server)      go install into .tools/bin (module proxy)
#   chromium (the browser tests)          apt-get, when root with apt
#   ffmpeg, ffprobe, pdftoppm (the tests  apt-get, when root with apt
#     of the boxed converters)
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
((${#missing[@]})) || exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
cmd="apt-get install -y ${missing[*]}"
if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
	say "installing ${missing[*]} (apt-get)"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	fi
	exit 0
fi
say "the tests need ${missing[*]}; run:  sudo $cmd"
say "(or BOTD_SKIP_BROWSER=1 to leave out the browser tests)"
exit 1
