#!/usr/bin/env bash
# make image: botd's container image from the Containerfile, tagged
# localhost/botd:$VERSION and localhost/botd:latest, with podman (or buildah
# when podman is missing).
#
# The Containerfile starts from docker.io's golang and debian images. Where
# they cannot be pulled (no registry reachable) this script builds both
# from what the machine has, once, and passes them as build arguments:
#
#   localhost/debian-base:bookworm   a minbase Debian (slim) made by mmdebstrap
#                                    from the apt mirror of
#                                    /etc/apt/sources.list* (MIRROR=...)
#   localhost/botd-golang:<version>  that base plus this machine's Go
#                                    toolchain ($(go env GOROOT))
#
# Both steps need root or a user with subuids; mmdebstrap and buildah (or
# podman) come from Debian: apt-get install podman buildah mmdebstrap runc.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
VERSION=${VERSION:-dev}
COMMIT=${COMMIT:-}
DATE=${DATE:-}
IMAGE=${IMAGE:-localhost/botd}
BASE=${BASE:-docker.io/library/debian:bookworm-slim}
GO_IMAGE=${GO_IMAGE:-docker.io/library/golang:1.26-bookworm}
SUITE=${SUITE:-bookworm}

say() { printf 'image: %s\n' "$*" >&2; }

if command -v podman >/dev/null; then
	engine=(podman)
	# crun refuses cgroups v1 ("hybrid mode"); runc does not.
	if [[ $(podman info --format '{{.Host.CgroupsVersion}}' 2>/dev/null) == v1 ]] && command -v runc >/dev/null; then
		engine+=(--runtime runc)
	fi
	build=("${engine[@]}" build)
	exists() { podman image exists "$1"; }
elif command -v buildah >/dev/null; then
	engine=(buildah)
	build=(buildah bud)
	exists() { buildah inspect --type image "$1" >/dev/null 2>&1; }
else
	say "needs podman or buildah: apt-get install podman"
	exit 1
fi
pullable() { exists "$1" || timeout 120 "${engine[@]}" pull -q "$1" >/dev/null 2>&1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! pullable "$BASE"; then
	say "cannot pull $BASE: using localhost/debian-base:$SUITE"
	BASE=localhost/debian-base:$SUITE
	if ! exists "$BASE"; then
		command -v mmdebstrap >/dev/null || { say "building the base needs mmdebstrap: apt-get install mmdebstrap"; exit 1; }
		mirror=${MIRROR:-$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
			grep -oE '^(URIs:|deb)[[:space:]]+https?://[^[:space:]]+/debian/?([[:space:]]|$)' | awk '{print $2; exit}' || true)}
		mirror=${mirror:-http://deb.debian.org/debian}
		say "mmdebstrap --variant=minbase $SUITE from $mirror"
		# Like Debian's slim images: no documentation, manuals or
		# translations, now or in what the image's apt-get installs later.
		mmdebstrap --quiet --variant=minbase --include=ca-certificates \
			--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
			--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
			--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
			"$SUITE" "$tmp/rootfs.tar" "$mirror" </dev/null
		if [[ ${engine[0]} == podman ]]; then
			podman import "$tmp/rootfs.tar" "$BASE" >/dev/null
		else
			c=$(buildah from scratch)
			buildah add --quiet "$c" "$tmp/rootfs.tar" / >/dev/null
			buildah commit --quiet "$c" "$BASE" >/dev/null
			buildah rm "$c" >/dev/null
		fi
		rm -f "$tmp/rootfs.tar"
	fi
fi

if ! pullable "$GO_IMAGE"; then
	gover=$("$GO" env GOVERSION)
	GO_IMAGE=localhost/botd-golang:${gover#go}
	say "cannot pull the golang image: using $GO_IMAGE (this machine's Go)"
	if ! exists "$GO_IMAGE"; then
		# The toolchain, then this machine's CA bundle: where HTTPS goes
		# through an intercepting proxy, the module downloads trust what
		# the host trusts. (The final image keeps Debian's own bundle.)
		cat >"$tmp/Containerfile.go" <<-EOT
			FROM $BASE
			COPY . /usr/local/go
			ENV PATH=/usr/local/go/bin:/root/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GOTOOLCHAIN=local
		EOT
		"${build[@]}" -q -f "$tmp/Containerfile.go" -t "$GO_IMAGE-toolchain" "$("$GO" env GOROOT)" >/dev/null
		mkdir "$tmp/ca"
		cp "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$tmp/ca/ca-certificates.crt"
		printf 'FROM %s\nCOPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt\n' "$GO_IMAGE-toolchain" >"$tmp/ca/Containerfile"
		"${build[@]}" -q -f "$tmp/ca/Containerfile" -t "$GO_IMAGE" "$tmp/ca" >/dev/null
		"${engine[@]}" rmi "$GO_IMAGE-toolchain" >/dev/null
	fi
fi

say "building $IMAGE:$VERSION (base $BASE, go $GO_IMAGE)"
start=$SECONDS
"${build[@]}" --network host -f Containerfile \
	--build-arg BASE="$BASE" --build-arg GO_IMAGE="$GO_IMAGE" \
	--build-arg GOPROXY="$("$GO" env GOPROXY)" \
	--build-arg VERSION="$VERSION" --build-arg COMMIT="$COMMIT" --build-arg DATE="$DATE" \
	-t "$IMAGE:$VERSION" -t "$IMAGE:latest" .
say "built $IMAGE:$VERSION in $((SECONDS - start)) s"
"${engine[@]}" images "$IMAGE" >&2
