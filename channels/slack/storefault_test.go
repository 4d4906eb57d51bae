package slack

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/testwait"
)

var fastRetry = backoff.Schedule{Initial: time.Millisecond, Max: 20 * time.Millisecond}

// Socket Mode: an envelope is acknowledged only once the store holds its
// message. While the store refuses (its database held locked by another
// connection) the fake sees no ack; once it works, the message is stored
// once and acknowledged.
func TestSocketEnvelopeAckedOnlyOnceStored(t *testing.T) {
	h := newHarness(t, nil)
	fs := chantest.NewFaultyStore(t)
	h.sink.OnDeliver = fs.StoreLike(h.sink)
	h.sl.env.Inbox = channels.NewInbox(h.sl.log, nil, fastRetry)
	h.start(t)
	fs.Lock(t)
	ev := message(testChannel, human, "one", nil)
	acked := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), chantest.HangGuard)
		defer cancel()
		acked <- h.fake.SendEvent(ctx, ev)
	}()
	testwait.Until(t, "three refused writes", func() bool { return fs.Refused.Load() >= 3 })
	select {
	case err := <-acked:
		t.Fatalf("the envelope was acknowledged (%v) while the store refused its message", err)
	default:
	}
	fs.Unlock(t)
	if err := <-acked; err != nil {
		t.Fatalf("no ack after the store recovered: %v", err)
	}
	if got := fs.Stored(t, "slack:"+testChannel); !slices.Equal(got, []string{ev["ts"].(string)}) {
		t.Errorf("stored %v, want the message once", got)
	}
	h.next(t)
}

// Events API: a request is answered 503 while the store refuses its event
// (Slack then retries it, with the same event id); a retry joins the event
// still held, and the one after the store took it is answered 200. The
// message is stored once.
func TestEventsAPIAnswers503UntilStored(t *testing.T) {
	const secret = "s3cret-signing"
	h := newHarness(t, func(cfg *Config) {
		cfg.Mode, cfg.AppToken, cfg.SigningSecret, cfg.Listen = ModeEvents, "", secret, "127.0.0.1:0"
	})
	fs := chantest.NewFaultyStore(t)
	h.sink.OnDeliver = fs.StoreLike(h.sink)
	h.sl.env.Inbox = channels.NewInbox(h.sl.log, nil, fastRetry)
	h.start(t)
	fs.Lock(t)
	ev := message(testChannel, human, "one", nil)
	body := mustJSON(t, slackfake.Callback(ev)) // one event id, as Slack's retries carry
	post := func() int {
		t.Helper()
		req := signedRequest(t, "http://"+h.sl.Addr().String()+"/slack/events", secret, body, time.Now())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for try := 0; try < 2; try++ {
		if code := post(); code != http.StatusServiceUnavailable {
			t.Fatalf("try %d answered %d while the store refused, want 503", try, code)
		}
	}
	fs.Unlock(t)
	testwait.Until(t, "the message stored", func() bool { return len(fs.Stored(t, "slack:"+testChannel)) == 1 })
	if code := post(); code != http.StatusOK {
		t.Errorf("the retry after the store took the event answered %d, want 200", code)
	}
	if got := fs.Stored(t, "slack:"+testChannel); !slices.Equal(got, []string{ev["ts"].(string)}) {
		t.Errorf("stored %v, want the message once", got)
	}
	if n := h.sink.Total(); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
	h.next(t)
}
