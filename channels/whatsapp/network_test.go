package whatsapp

import (
	"errors"
	"fmt"
	"testing"

	"github.com/botd-dev/botd/channels"
)

// A logged-out device is the daemon's channels.ErrLoggedOut (which lets
// the other channels carry on), through any wrapping, with its own words.
func TestLoggedOutIsTheChannelsError(t *testing.T) {
	err := fmt.Errorf("whatsapp: start: %w", ErrLoggedOut)
	if !errors.Is(err, channels.ErrLoggedOut) || !errors.Is(err, ErrLoggedOut) {
		t.Errorf("%v is not channels.ErrLoggedOut", err)
	}
	if errors.Is(errors.New("whatsapp device is logged out"), channels.ErrLoggedOut) {
		t.Error("another error with the same words counts as logged out")
	}
	if want := "whatsapp device is logged out; run `botd whatsapp login` to pair again"; ErrLoggedOut.Error() != want {
		t.Errorf("ErrLoggedOut = %q, want %q", ErrLoggedOut, want)
	}
}

// The description hands the config its section type (with the session
// path to resolve) and botd database migrate the session store.
func TestDescription(t *testing.T) {
	n, ok := channels.Lookup("whatsapp")
	if !ok || n.Config == nil || n.New == nil || n.MigrateSession == nil || n.RefPrefix != "wa" {
		t.Fatalf("description = %+v", n)
	}
	c, ok := n.Config().(*Config)
	if !ok || c.Enabled {
		t.Fatalf("Config() = %#v, want a disabled *Config", n.Config())
	}
	*c.Paths()[0] = "session.db"
	if c.SessionDB != "session.db" {
		t.Errorf("Paths() does not point at session_db")
	}
	// No session file: nothing to copy, and no store created.
	dir := t.TempDir()
	_, from, found, err := n.MigrateSession(t.Context(), channels.Host{DataDir: dir}, n.Config(), "postgres://unused", nil)
	if err != nil || found {
		t.Errorf("MigrateSession without a session = %q, %v, %v; want nothing found", from, found, err)
	}
}
