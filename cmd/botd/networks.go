package main

// The chat networks built into botd: each networks_<name>.go imports one
// network's package, whose init registers its description
// (channels.Register), behind the build tag no<name>, so
// `go build -tags nodiscord ./cmd/botd` links no Discord code and the
// config then refuses a channels.discord section as an unknown key.
// `make build` builds them all.
