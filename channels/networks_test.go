package channels

import (
	"errors"
	"time"
)

// The networks whose chats and refs these tests use, described as far as
// they need: the real descriptions register from the network packages
// (their init) when a test links them.
func init() {
	for _, n := range []Network{
		{Name: "telegram", RefPrefix: "tg"}, {Name: "slack", RefPrefix: "sl"}, {Name: "whatsapp", RefPrefix: "wa"},
		{Name: "web", RefPrefix: "wb"}, {Name: "discord", RefPrefix: "dc"}, {Name: "matrix", RefPrefix: "mx"},
		{Name: "regnet", RefPrefix: "rn", Formatting: "regnet markdown", ValidChat: func(native string) error {
			if native != "ok" {
				return errors.New("regnet wants ok")
			}
			return nil
		}},
	} {
		n.RefTTL = 30 * 24 * time.Hour
		if n.Name == "regnet" {
			n.RefTTL = 3 * time.Hour
		}
		if n.Name == "whatsapp" {
			n.RefTTL = 14 * 24 * time.Hour
		}
		if _, linked := Lookup(n.Name); !linked {
			Register(n)
		}
	}
}
