package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// Network describes a chat network to the rest of botd, in the style of
// mautrix-go bridgev2's network connectors and Caddy's modules: each
// network package calls Register from its init, and botd's shared code
// (refs, chat ids, the prompt, the config, the daemon) reads the
// description instead of naming the network. A network left out of the
// build (its build tag) is then simply not there.
type Network struct {
	// Name is the chat id prefix and the config key: channels.<Name>.
	Name string
	// RefPrefix starts the ids of its media refs ("dc" in dc_…), and
	// RefTTL is how long they stay fetchable when media.ref_ttl does not
	// say: as long as the network still serves the bytes.
	RefPrefix string
	RefTTL    time.Duration
	// Formatting tells the model which markdown the network shows; empty
	// means plain text.
	Formatting string
	// ValidChat checks the native part of a chat id ("<Name>:<native>");
	// nil accepts any without spaces.
	ValidChat func(native string) error
	// ChatWarning says why a chat id ValidChat lets through cannot be a
	// chat of this network ("1234567890x" for Telegram), for a warning
	// of `botd config check`; "" when it can be. Nil: no opinion.
	ChatWarning func(native string) string
	// Setup says in a few words how to turn the network on, for the
	// message of a config with no channel enabled.
	Setup string
	// Checks says what its Checker does, for `botd doctor`'s help, e.g.
	// "Telegram getMe".
	Checks string
	// Example is the network's section of the example config, indented
	// under channels:.
	Example string
	// Config returns a pointer to the network's settings holding their
	// defaults; the config file's channels.<Name> is decoded over it,
	// strictly.
	Config func() NetworkConfig
	// New constructs the channel from its settings (the value Config
	// returned, decoded); it connects nothing. Nil for a network the
	// daemon builds itself (the web rooms, which need its services).
	New func(env Env, host Host, cfg NetworkConfig) (Channel, error)
	// SetupInApp is a network whose users are told there what to set
	// (the web rooms' pages): with it on, a config without a usable
	// model still starts.
	SetupInApp bool
	// MigrateSession, when set, opens the network's own session store
	// for `botd database migrate`, which copies it into the Postgres
	// database at dsn in the same transaction as botd's tables. from
	// names it for a person; ok is false when there is none to copy.
	// MigratedNote is printed after a copy, %s being from.
	MigrateSession func(ctx context.Context, host Host, cfg NetworkConfig, dsn string, log *slog.Logger) (a store.Attached, from string, ok bool, err error)
	MigratedNote   string
	// Check, when set, is what `botd config check` asks of an enabled
	// network besides its Validate: a call proving the settings work.
	Check func(ctx context.Context, cfg NetworkConfig) error
}

// ErrLoggedOut is (errors.Is) a channel's start error when the network
// unlinked botd's account: with other channels running, botd carries on
// without it and says so, rather than stopping them all.
var ErrLoggedOut = errors.New("logged out")

// NetworkConfig is a network's settings.
type NetworkConfig interface {
	// On reports whether the network is enabled.
	On() bool
	// Validate reports every problem with its full key path
	// (channels.<name>.…), as settings.Problems.
	Validate() error
}

// Host is what a network's constructor may need of the daemon besides
// Env: where botd keeps its data and which database it uses (a network
// keeping a session of its own puts it there).
type Host struct {
	DataDir  string
	Database store.Config
}

var (
	netMu    sync.RWMutex
	networks = map[string]Network{}
)

// Register adds a network; it is called from the network package's init.
// It also gives the network's refs their prefix and lifetime and its chat
// ids their rule. A name taken twice, or a description missing its name
// or ref settings, is a programming error and panics.
func Register(n Network) {
	if n.Name == "" || strings.ContainsAny(n.Name, ":. ") {
		panic(fmt.Sprintf("channels: network name %q is empty or holds ':', '.' or a space", n.Name))
	}
	netMu.Lock()
	defer netMu.Unlock()
	if _, dup := networks[n.Name]; dup {
		panic(fmt.Sprintf("channels: network %q registered twice", n.Name))
	}
	if n.New != nil && n.Config == nil {
		panic(fmt.Sprintf("channels: network %q has a constructor but no Config", n.Name))
	}
	mediaregistry.RegisterNetwork(n.Name, n.RefPrefix, n.RefTTL)
	groups.RegisterNetwork(n.Name, n.ValidChat)
	networks[n.Name] = n
}

// Lookup returns the registered network called name.
func Lookup(name string) (Network, bool) {
	netMu.RLock()
	defer netMu.RUnlock()
	n, ok := networks[name]
	return n, ok
}

// Networks lists the registered networks by name.
func Networks() []Network {
	netMu.RLock()
	defer netMu.RUnlock()
	out := make([]Network, 0, len(networks))
	for _, n := range networks {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Network) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Warner is a network's settings that can be valid and still worth a
// warning from `botd config check` (a build that cannot do what they ask).
type Warner interface {
	Warnings() []string
}

// Listener is a network's settings that make botd listen on addresses
// (a webhook): key path → address, which `botd doctor` tries.
type Listener interface {
	Listens() map[string]string
}
