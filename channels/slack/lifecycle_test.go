package slack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/slack/slackfake"
)

// After Start's ctx ends, Wait returns only once the message being handed
// to the sink was handed over, the Events API server no longer listens,
// and nothing reaches the sink afterwards: shutdown can close the store
// once Wait returned.
func TestWaitAfterCancel(t *testing.T) {
	const secret = "s3cret-signing"
	cases := []struct {
		name   string
		events bool
	}{
		{"socket mode", false},
		{"events API", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, func(cfg *Config) {
				if c.events {
					cfg.Mode, cfg.AppToken, cfg.SigningSecret, cfg.Listen = ModeEvents, "", secret, "127.0.0.1:0"
				}
			})
			// The second message is held in the sink until released.
			entered, release := make(chan struct{}), make(chan struct{})
			h.sink.OnDeliver = func(_ context.Context, in channels.Inbound) error {
				if in.Text == "two" {
					close(entered)
					<-release
				}
				return nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := h.sl.Start(ctx); err != nil {
				t.Fatal(err)
			}
			send := func(text string) error {
				ev := message(testChannel, human, text, nil)
				if !c.events {
					sctx, cancel := context.WithTimeout(context.Background(), chantest.HangGuard)
					defer cancel()
					return h.fake.SendEvent(sctx, ev)
				}
				req := signedRequest(t, "http://"+h.sl.Addr().String()+"/slack/events", secret,
					mustJSON(t, slackfake.Callback(ev)), time.Now())
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			}
			if err := send("one"); err != nil {
				t.Fatal(err)
			}
			// "two" is acknowledged only once stored, which the sink holds
			// up; its ack (or a 503) comes after shutdown or not at all.
			go func() { _ = send("two") }()
			<-entered
			addr := h.sl.Addr()
			cancel()
			waited := make(chan struct{})
			go func() {
				defer close(waited)
				chantest.WaitReturns(t, h.sl)
			}()
			close(release)
			<-waited
			if got := h.sink.Total(); got != 2 {
				t.Fatalf("%d messages handed over when Wait returned, want 2", got)
			}

			// Stragglers after Wait: an event queued by a mounted handler
			// stays queued, since nothing hands it to the sink any more,
			// and is not acknowledged: Slack sends it again to the next
			// start.
			body := mustJSON(t, slackfake.Callback(message(testChannel, human, "late", nil)))
			req := httptest.NewRequest(http.MethodPost, "/slack/events", strings.NewReader(string(body)))
			req.Header = signedRequest(t, "http://x/slack/events", secret, body, time.Now()).Header
			h.sl.cfg.SigningSecret = secret // socket mode has none; no goroutine reads cfg any more
			rec := httptest.NewRecorder()
			h.sl.EventsHandler(context.Background()).ServeHTTP(rec, req)
			if rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("handler status %d for an event nothing stored, want 503", rec.Code)
			}
			if n := len(h.sl.queue); n != 1 {
				t.Errorf("%d events queued after Wait, want the late one still there", n)
			}
			if got := h.sink.Total(); got != 2 {
				t.Errorf("%d messages delivered after Wait returned, want none", got-2)
			}
			if addr != nil {
				if resp, err := http.Post("http://"+addr.String()+"/slack/events", "application/json", strings.NewReader("{}")); err == nil {
					resp.Body.Close()
					t.Error("the Events API server still answers after Wait")
				}
			}
		})
	}
}
