package slack

import (
	"context"
	"strings"
	"testing"
)

// Check proves the bot token with auth.test and connects nothing: no
// socket is opened, so nothing is received.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, authErr, want string
		fail                bool
	}{
		{name: "token works", want: `bot user UBOT0001 in workspace "Fake"`},
		{name: "token revoked", authErr: "invalid_auth", want: "check channels.slack.bot_token (SLACK_BOT_TOKEN)", fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if tc.authErr != "" {
				h.fake.FailAuth(tc.authErr)
			}
			who, err := h.sl.Check(context.Background())
			got := who
			if err != nil {
				got = err.Error()
			}
			if (err != nil) != tc.fail || !strings.Contains(got, tc.want) {
				t.Fatalf("Check = %q, %v; want %q (fail %v)", who, err, tc.want, tc.fail)
			}
			if strings.Contains(got, h.sl.cfg.BotToken) || strings.Contains(got, h.sl.cfg.AppToken) {
				t.Errorf("a token in %q", got)
			}
			// Read-only: auth.test is all the fake heard, and no socket.
			if all, auth := h.fake.AllCalls(), h.fake.Calls("auth.test"); all != auth || auth == 0 || h.fake.Connections() != 0 {
				t.Errorf("Check made %d calls, %d of them auth.test, and %d socket connections", all, auth, h.fake.Connections())
			}
		})
	}
}
