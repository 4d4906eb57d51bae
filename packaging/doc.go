// Package packaging holds no code: its tests check what `make package`
// and `make image` ship (the .deb and its systemd unit, the tarballs, the
// Containerfile and compose.yaml). The files live beside them: nfpm.yaml,
// botd.service, deb/ (maintainer scripts) and nfpm/ (the packager, a
// module of its own).
package packaging
