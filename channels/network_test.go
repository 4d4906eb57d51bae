package channels

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
)

// A registered network is found by name and in the list, its refs get its
// prefix and lifetime, and its chat ids its rule.
func TestRegisterDescribesTheNetwork(t *testing.T) {
	n, ok := Lookup("regnet")
	if !ok {
		t.Fatal("regnet is not registered")
	}
	if n.Formatting != "regnet markdown" {
		t.Errorf("Formatting = %q", n.Formatting)
	}
	found := false
	for _, m := range Networks() {
		found = found || m.Name == "regnet"
	}
	if !found {
		t.Error("Networks() does not list regnet")
	}
	id, err := mediaregistry.NewID("regnet")
	if err != nil || !strings.HasPrefix(id, "rn_") {
		t.Errorf("NewID = %q, %v, want an rn_ id", id, err)
	}
	if got := mediaregistry.New(nil, 0).TTL("regnet"); got != 3*time.Hour {
		t.Errorf("TTL = %s, want 3h", got)
	}
	if err := groups.ValidateChatID("regnet:ok"); err != nil {
		t.Errorf("a valid chat id: %v", err)
	}
	if err := groups.ValidateChatID("regnet:nope"); err == nil || err.Error() != "regnet wants ok" {
		t.Errorf("the network's rule is not applied: %v", err)
	}
}

// A description that would break another network's refs or chat ids, or
// that cannot be built, is refused at init (a panic names it).
func TestRegisterRefusesBadDescriptions(t *testing.T) {
	build := func(Env, Host, NetworkConfig) (Channel, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		n    Network
		want string
	}{
		{"taken name", Network{Name: "regnet", RefPrefix: "zz", RefTTL: time.Hour}, "registered twice"},
		{"taken prefix", Network{Name: "other1", RefPrefix: "rn", RefTTL: time.Hour}, `"rn"`},
		{"no prefix", Network{Name: "other2", RefTTL: time.Hour}, "ref prefix"},
		{"no lifetime", Network{Name: "other3", RefPrefix: "o3"}, "ref lifetime"},
		{"empty name", Network{RefPrefix: "o4", RefTTL: time.Hour}, "empty"},
		{"colon in name", Network{Name: "a:b", RefPrefix: "o5", RefTTL: time.Hour}, "':'"},
		{"constructor without config", Network{Name: "other7", RefPrefix: "o7", RefTTL: time.Hour, New: build}, "no Config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("panic = %v, want one saying %s", r, tc.want)
				}
				if _, ok := Lookup(tc.n.Name); ok && tc.n.Name != "regnet" {
					t.Errorf("%q was registered anyway", tc.n.Name)
				}
			}()
			Register(tc.n)
		})
	}
}
