package main

// The chat networks built into botd: each networks_<name>.go imports one
// network's package, whose init registers its description
// (channels.Register), behind the build tag no<name>, so
// `go build -tags no<name> ./cmd/botd` links none of its code and the
// config then refuses a channels.<name> section as an unknown key.
// `make build` builds them all.
