package matrix

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/matrix/matrixfake"
)

// Check asks /account/whoami and nothing else: no sync, and no password
// login (a new device) when no token was kept yet.
func TestCheck(t *testing.T) {
	passwordOnly := func(c *Config) { c.AccessToken, c.Password = "", matrixfake.Password }
	for _, tc := range []struct {
		name      string
		mut       func(*Config)
		startOnce bool // a start first, which logs in and keeps the token
		want      string
		wantErr   error // nil: no error; else errors.Is
		logins    int
	}{
		{name: "access token", want: "user " + matrixfake.UserID + " (device " + matrixfake.DeviceID + ")"},
		{name: "token rejected", mut: func(c *Config) { c.AccessToken = "syt_revoked_token_not_real" },
			want: "rejected the access token", wantErr: errAny},
		{name: "password, never logged in", mut: passwordOnly, want: "has not logged in yet", wantErr: channels.ErrUnchecked},
		{name: "password, token kept by a start", mut: passwordOnly, startOnce: true, want: "user " + matrixfake.UserID, logins: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var muts []func(*Config)
			if tc.mut != nil {
				muts = append(muts, tc.mut)
			}
			h := newHarness(t, muts...)
			m := h.mx
			if tc.startOnce {
				h.start(t, m)()
				m = h.build(t)
			}
			syncs := len(h.fake.Syncs())
			who, err := m.Check(context.Background())
			got := who
			if err != nil {
				got = err.Error()
			}
			switch {
			case tc.wantErr == nil && err != nil, tc.wantErr != nil && err == nil,
				tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("Check = %q, %v; want error %v", who, err, tc.wantErr)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("Check said %q, want %q", got, tc.want)
			}
			for _, secret := range []string{matrixfake.Token, matrixfake.Password, "syt_revoked_token_not_real"} {
				if strings.Contains(got, secret) {
					t.Errorf("a secret in %q", got)
				}
			}
			if n := h.fake.Logins(); n != tc.logins {
				t.Errorf("%d password logins, want %d", n, tc.logins)
			}
			if n := len(h.fake.Syncs()); n != syncs {
				t.Errorf("Check synced (%d syncs, had %d)", n, syncs)
			}
		})
	}
}

// errAny stands for "some error" in a table.
var errAny = errors.New("any error")
