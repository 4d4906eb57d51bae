package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
)

// After Start's ctx ends, Wait returns only once the message being handed
// to the sink was handed over, and nothing reaches the sink afterwards:
// shutdown can close the store once Wait returned.
func TestWaitAfterCancel(t *testing.T) {
	const secret = "s3cret-Token_1"
	cases := []struct {
		name    string
		webhook bool
	}{
		{"long polling", false},
		{"webhook", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, func(cfg *Config) {
				if c.webhook {
					cfg.Webhook = &Webhook{Listen: "127.0.0.1:0", URL: "https://bot.example.invalid/hook", Secret: secret}
				}
			})
			// The second message is held in the sink until released.
			entered, release := make(chan struct{}), make(chan struct{})
			h.sink.OnDeliver = func(_ context.Context, in channels.Inbound) error {
				if in.ID == "2" {
					close(entered)
					<-release
				}
				return nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := h.tg.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if err := h.tg.SetTyping(ctx, ChatID(groupID), true); err != nil {
				t.Fatal(err)
			}
			post := func(u models.Update) {
				status, err := telegramtest.PostUpdate(context.Background(), "http://"+h.tg.WebhookAddr()+"/hook", secret, u)
				if err != nil || status != http.StatusOK {
					t.Errorf("webhook post: %d %v", status, err)
				}
			}
			posted := make(chan struct{})
			if c.webhook {
				post(telegramtest.Text(group, alice, 1, "one"))
				go func() { defer close(posted); post(telegramtest.Text(group, alice, 2, "two")) }()
			} else {
				close(posted)
				h.fake.Enqueue(telegramtest.Text(group, alice, 1, "one"), telegramtest.Text(group, alice, 2, "two"))
			}
			<-entered
			cancel()
			waited := make(chan struct{})
			go func() {
				defer close(waited)
				chantest.WaitReturns(t, h.tg)
			}()
			close(release)
			<-waited
			if got := h.sink.Total(); got != 2 {
				t.Fatalf("%d messages handed over when Wait returned, want 2", got)
			}
			<-h.tg.Done()
			<-posted

			// Stragglers after Wait: an update the library still held, a
			// webhook call on a mounted handler. Neither reaches the sink.
			late := telegramtest.Text(group, alice, 3, "late")
			h.tg.onUpdate(context.Background(), nil, &late)
			body, _ := json.Marshal(telegramtest.Text(group, alice, 4, "late too"))
			req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
			rec := httptest.NewRecorder()
			h.tg.WebhookHandler().ServeHTTP(rec, req)
			if got := h.sink.Total(); got != 2 {
				t.Errorf("%d messages delivered after Wait returned, want none", got-2)
			}
			if err := h.tg.SetTyping(context.Background(), ChatID(groupID), true); err != nil {
				t.Errorf("typing after the end: %v", err)
			}
			chantest.WaitReturns(t, h.tg) // no typing loop was left behind
		})
	}
}
