package mediaregistry

import "time"

// The networks these tests make refs of. Each real network registers its
// prefix and lifetime from its own package (channels.Register), which
// this package's tests do not link.
func init() {
	for _, n := range []struct {
		name, prefix string
		ttl          time.Duration
	}{
		{"whatsapp", "wa", 14 * 24 * time.Hour}, {"telegram", "tg", 30 * 24 * time.Hour}, {"slack", "sl", 30 * 24 * time.Hour},
		{"web", "wb", 30 * 24 * time.Hour}, {"discord", "dc", 30 * 24 * time.Hour}, {"matrix", "mx", 30 * 24 * time.Hour},
	} {
		RegisterNetwork(n.name, n.prefix, n.ttl)
	}
}
