#!/usr/bin/env bash
# make package: for each architecture in ARCHS (amd64 arm64) a tarball
# (the binary, README, example config, systemd unit) and a .deb in dist/.
# Pure Go (CGO_ENABLED=0) with the goolm tag, so one machine cross-builds
# every architecture. The .deb is built by nFPM (packaging/nfpm, a module
# of its own) from packaging/nfpm.yaml.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
TAGS=${TAGS:-goolm}
VERSION=${VERSION:?VERSION not set (run make package)}
LDFLAGS=${LDFLAGS:?LDFLAGS not set (run make package)}
ARCHS=${ARCHS:-amd64 arm64}
DIST=${DIST:-dist}
# Releases are pure Go without local paths. BOTD_PKG_DEVBUILD=1 (the
# package test) builds as go build and go vet do instead, to reuse the
# build cache; a release never sets it.
buildflags=(-trimpath -ldflags "-s -w $LDFLAGS")
cgo=0
if [[ ${BOTD_PKG_DEVBUILD:-} == 1 ]]; then
	buildflags=(-ldflags "$LDFLAGS")
	cgo=$("$GO" env CGO_ENABLED)
fi

say() { printf 'package: %s\n' "$*" >&2; }

# Debian versions start with a digit: v1.2.3-4-gabc becomes 1.2.3.4.gabc;
# without a tag git describe names the commit (4f4a8d7, maybe -dirty):
# 0.0.0+git<date>.<commit>.
if [[ $VERSION =~ ^v?[0-9]+\.[0-9]+ ]]; then
	debver=${VERSION#v}
else
	debver=0.0.0+git$(date -u +%Y%m%d).$VERSION
fi
debver=${debver//-/.}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# The installed config: the example with its data under /var/lib/botd
# (scripts/installed-config.sh, which the image uses too).
scripts/installed-config.sh config.example.yaml >"$stage/config.yaml"

say "building nfpm (packaging/nfpm)"
"$GO" -C packaging/nfpm build -o "$stage/nfpm" .

mkdir -p "$DIST"
rm -f "$DIST"/botd_* "$DIST"/SHA256SUMS
for arch in $ARCHS; do
	say "botd $VERSION for linux/$arch"
	mkdir -p "$stage/$arch"
	CGO_ENABLED=$cgo GOOS=linux GOARCH=$arch "$GO" build -tags "$TAGS" "${buildflags[@]}" \
		-o "$stage/$arch/botd" ./cmd/botd
	if [[ $arch == $("$GO" env GOHOSTARCH) ]]; then
		# The installed config must load as it is.
		(cd "$stage" && "$stage/$arch/botd" config check --config "$stage/config.yaml" >/dev/null)
	fi

	name=botd_${VERSION}_linux_$arch
	mkdir -p "$stage/tar/$name"
	cp "$stage/$arch/botd" README.md config.example.yaml packaging/botd.service "$stage/tar/$name/"
	tar -C "$stage/tar" --sort=name --owner=0 --group=0 --numeric-owner -czf "$DIST/$name.tar.gz" "$name"

	BOTD_ARCH=$arch BOTD_DEB_VERSION=$debver BOTD_BIN=$stage/$arch/botd BOTD_CONFIG=$stage/config.yaml \
		"$stage/nfpm" -config packaging/nfpm.yaml -target "$DIST" >/dev/null
done
(cd "$DIST" && sha256sum botd_* >SHA256SUMS)
ls -l "$DIST"/botd_* >&2
