package whatsapp

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels/whatsapp/watest"
)

// Check says whether the session store holds a paired device, without
// connecting, and creates no session file where there was none.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, s Session)
		want    string
		fail    bool
		created bool // the session file exists after Check
	}{
		{name: "no session file", want: "not paired (no session in", fail: true},
		{name: "store without a device", prepare: func(t *testing.T, s Session) {
			c, err := openContainer(ctx, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
		}, want: "not paired (no device in", fail: true, created: true},
		{name: "paired", prepare: func(t *testing.T, s Session) {
			c, err := openContainer(ctx, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			watest.PairedDevice(t, c)
		}, want: "paired as " + watest.Own.ToNonAD().String(), created: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestChannel(t, Config{})
			if tc.prepare != nil {
				tc.prepare(t, e.w.session)
			}
			who, err := e.w.Check(ctx)
			got := who
			if err != nil {
				got = err.Error()
			}
			if (err != nil) != tc.fail || !strings.Contains(got, tc.want) {
				t.Fatalf("Check = %q, %v; want %q (fail %v)", who, err, tc.want, tc.fail)
			}
			if tc.fail && !strings.Contains(got, "botd whatsapp login") {
				t.Errorf("%q does not say to run the login", got)
			}
			if _, err := os.Stat(e.w.session.Path); (err == nil) != tc.created {
				t.Errorf("session file exists: %v, want %v", err == nil, tc.created)
			}
		})
	}
}
