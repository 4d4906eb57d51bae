package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

var logOut io.Writer = io.Discard

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// storeLike makes sink store what it hears in a real store, like the
// router would.
func storeLike(st *store.Store) func(context.Context, channels.Inbound) error {
	return func(ctx context.Context, in channels.Inbound) error {
		if err := st.UpsertChat(ctx, store.Chat{ID: in.ChatID, Name: in.ChatName, IsGroup: in.IsGroup, LastMessageAt: in.Time}); err != nil {
			return err
		}
		_, err := st.PutMessage(ctx, store.Message{ChatID: in.ChatID, ID: in.ID, SenderID: in.SenderID,
			SenderName: in.SenderName, Text: in.Text, Time: in.Time, FromMe: in.FromMe, IsBot: in.IsBot,
			ThreadID: in.ThreadID})
		return err
	}
}

type harness struct {
	// delivered is every message next took from the sink.
	delivered []channels.Inbound

	fake   *slackfake.Server
	sink   *chantest.Sink
	reg    *mediaregistry.Registry
	st     *store.Store
	sl     *Slack
	ctx    context.Context
	cancel context.CancelFunc
}

const testChannel = "C0GENERAL"

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	return newFencedHarness(t, mutate, nil)
}

// newFencedHarness is newHarness with fence as the channel's Env.Fence.
func newFencedHarness(t *testing.T, mutate func(*Config), fence channels.Fence) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	fake := slackfake.New(t)
	h := &harness{
		fake: fake,
		st:   st,
		reg:  mediaregistry.New(st.DB, 30*time.Minute),
		sink: chantest.NewSink("slack:"+testChannel, "slack:D0DIRECT"),
		ctx:  ctx,
	}
	h.sink.OnDeliver = storeLike(st)
	// Whatever a test made the channel deliver keeps the invariants every
	// channel keeps. Runs before the store closes (cleanups run last-first).
	t.Cleanup(func() {
		for _, in := range append(h.delivered, h.sink.Inbounds()...) {
			chantest.CheckInbound(t, h.reg, in, h.sink.Registered(in.ChatID))
		}
	})
	cfg := Config{Enabled: true, BotToken: slackfake.BotToken, AppToken: slackfake.AppToken, APIURL: fake.APIURL()}
	if mutate != nil {
		mutate(&cfg)
	}
	sl, err := New(cfg, channels.Env{Registry: h.reg, Sink: h.sink, AssistantName: "Andy",
		Log: slog.New(slog.NewTextHandler(logOut, nil)), Fence: fence})
	if err != nil {
		t.Fatal(err)
	}
	// Only a hang guard: a loaded machine can be slow to connect.
	sl.connectTimeout = chantest.HangGuard
	h.sl = sl
	h.cancel = cancel
	return h
}

// start starts the channel, failing the test on error.
func (h *harness) start(t *testing.T) {
	t.Helper()
	if err := h.sl.Start(h.ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// Stopped before the store closes (cleanups run last-first).
	t.Cleanup(func() {
		h.cancel()
		chantest.WaitReturns(t, h.sl)
	})
}

// next waits for the next delivered message.
func (h *harness) next(t *testing.T) channels.Inbound {
	t.Helper()
	in := h.sink.Next(t)
	h.delivered = append(h.delivered, in)
	return in
}

// nothingBefore proves that nothing was delivered since the last next:
// it sends a marker message and requires it to be the next delivery
// (events are handled in order, so anything else would come first).
func (h *harness) nothingBefore(t *testing.T) {
	t.Helper()
	const marker = "marker: nothing before me"
	h.send(t, message(testChannel, human, marker, nil))
	if in := h.next(t); in.Text != marker {
		t.Fatalf("unexpected delivery: %+v", in)
	}
}

// send delivers an inner event over Socket Mode and waits for the ack.
func (h *harness) send(t *testing.T, event map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, chantest.HangGuard)
	defer cancel()
	if err := h.fake.SendEvent(ctx, event); err != nil {
		t.Fatal(err)
	}
}

var tsSeq struct {
	sync.Mutex
	n int
}

func nextTS() string {
	tsSeq.Lock()
	defer tsSeq.Unlock()
	tsSeq.n++
	return fmt.Sprintf("1712000000.%06d", tsSeq.n)
}

// message builds a Slack "message" event; extra fields override.
func message(channel, user, text string, extra map[string]any) map[string]any {
	ctype := "channel"
	if strings.HasPrefix(channel, "D") {
		ctype = "im"
	}
	m := map[string]any{"type": "message", "channel": channel, "channel_type": ctype, "user": user,
		"text": text, "ts": nextTS()}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

var refID = regexp.MustCompile(`ref:sl_[0-9A-Za-z]+`)

// normalizeRefs replaces random ref ids with their order of appearance.
func normalizeRefs(s string) string {
	n := 0
	return refID.ReplaceAllStringFunc(s, func(string) string {
		n++
		return "ref:sl_REF" + strconv.Itoa(n)
	})
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch:\n got: %q\nwant: %q", name, got, want)
	}
}

// signedRequest builds an Events API request signed with secret.
func signedRequest(t *testing.T, url, secret string, body []byte, when time.Time) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(when.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return req
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
