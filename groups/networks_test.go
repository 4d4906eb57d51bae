package groups

import "errors"

// The networks a chat id may name in these tests. Each real network
// registers itself from its own package (channels.Register), which this
// package's tests do not link; "web" here refuses a room named "bad" so
// that the network's own rule is seen to apply.
func init() {
	for _, n := range []string{"telegram", "slack", "whatsapp", "discord", "matrix"} {
		RegisterNetwork(n, nil)
	}
	RegisterNetwork("web", func(room string) error {
		if room == "bad" {
			return errors.New("bad room")
		}
		return nil
	})
}
