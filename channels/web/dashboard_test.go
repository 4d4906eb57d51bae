package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// The dashboard lists every registered network; this package's tests
// build only the web rooms, so a network that is off stands in here as
// its description (channels.Register) would.
func init() {
	channels.Register(channels.Network{Name: "telegram", RefPrefix: "tg", RefTTL: time.Hour,
		Setup: "channels.telegram.enabled: true and TELEGRAM_BOT_TOKEN"})
}

// The dashboard shows what the daemon did: channels and their state,
// groups and their media, runs with trigger, tokens, cost and tools, and
// the two charts.
func TestDashboard(t *testing.T) {
	mon := NewMonitor()
	h := newHarness(t, func(_ *Config, o *Options) {
		o.Monitor = mon
		o.Notice = "The assistant cannot answer yet: set ANTHROPIC_API_KEY"
		// WhatsApp and the web rooms on; every other network off.
		o.Networks = map[string]bool{"web": true, "whatsapp": true}
	})
	ctx := context.Background()
	mon.Started("web", nil)
	mon.Started("whatsapp", errors.New("whatsapp: logged out; run botd whatsapp login"))

	// Ann posts two photos; the agent fetches one.
	admin := h.admin()
	csrf := h.roomCSRF(admin, "main")
	h.post(admin, "main", csrf, "Ann", "look at this", upload{"a.png", "image/png", pngBytes(t, 30, 30)})
	h.post(admin, "main", csrf, "Ann", "and this", upload{"b.png", "image/png", pngBytes(t, 60, 60)})
	first := h.sink.Next(t)
	h.sink.Next(t)
	if err := h.reg.Downloaded(ctx, first.Refs[0].ID, first.Refs[0].Size); err != nil {
		t.Fatal(err)
	}

	h.st.UpsertChat(ctx, store.Chat{ID: "web:main", Name: "Main"})
	seq, err := h.st.PutMessage(ctx, store.Message{ChatID: "web:main", ID: first.ID, SenderName: "Ann", Text: first.Text, Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	parts, _ := json.Marshal([]map[string]any{{"kind": "tool_call", "tool_call": map[string]any{"id": "1", "name": "fetch_media", "args": map[string]string{"mediaRef": first.Refs[0].ID}}}})
	if err := h.st.SaveRun(ctx, store.AgentRun{ID: "run-1", Folder: "main", Started: now.Add(-3 * time.Second), Finished: now,
		Outcome: "answered", UpToSeq: seq, Model: "claude-haiku-4-5", Iterations: 2, InputTokens: 1234, OutputTokens: 56, CostMicrocents: 420_000, CostKnown: true},
		[]store.TranscriptEntry{{Role: "assistant", Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.SaveRun(ctx, store.AgentRun{ID: "run-0", Folder: "main", Started: now.Add(-48 * time.Hour), Finished: now.Add(-48*time.Hour + time.Second),
		Outcome: "model_failed", Error: "rate limited", CostKnown: true}, nil); err != nil {
		t.Fatal(err)
	}

	resp, page := h.get(admin, "/admin")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard: %d", resp.StatusCode)
	}
	for _, want := range []string{
		"set ANTHROPIC_API_KEY",                      // the notice
		`<span class="state running">running</span>`, // web
		`<span class="state failed">failed</span>`,   // whatsapp
		"logged out; run botd whatsapp login",        // its last problem
		`data-run="run-1"`, "claude-haiku-4-5", "1234 in / 56 out", "$0.0042", "fetch_media", "Ann: [a.png] look at this", "3s",
		`data-run="run-0"`, "model_failed", "rate limited",
		"web:main", "every message", "telegram:-100", "@Andy", // groups
		"fake/model",
		"<h1>Dashboard</h1>",
		// Every network: those off with how to turn them on, and the
		// group whose network is off marked.
		`data-net="telegram"><td data-label="network">telegram</td><td data-label="state"><span class="state off">off</span>`,
		"to turn it on: channels.telegram.enabled: true and TELEGRAM_BOT_TOKEN",
		`<span class="state off">telegram is off</span>`,
		// The tiles in plain words.
		"attachments opened by the assistant / shared", "because nobody asked",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	// Media: two refs, one fetched; the bytes chart has a bar of each kind
	// today, the cost chart one two days ago and one today.
	if !regexp.MustCompile(`<td class="num" data-label="attachments shared">2</td><td class="num" data-label="opened by the assistant">1</td>`).MatchString(page) {
		t.Error("the main group's media row does not say 2 refs, 1 fetched")
	}
	bars := regexp.MustCompile(`<rect class="([a-z ]+)" x="[0-9.]+" y="[0-9.]+" width="[0-9.]+" height="([0-9.]+)"`).FindAllStringSubmatch(page, -1)
	tall := map[string]int{}
	for _, b := range bars {
		if b[2] != "0.0" {
			tall[b[1]]++
		}
	}
	if tall["bar"] != 1 || tall["bar posted"] != 1 || tall["bar downloaded"] != 1 {
		t.Errorf("bars with a height: %v", tall)
	}
	if len(bars) != 3*chartDays {
		t.Errorf("%d bars, want %d", len(bars), 3*chartDays)
	}

	// Only the admin sees it.
	guestLink, err := h.w.auth.createLink(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	guest := h.client()
	_, body := h.get(guest, "/join")
	h.postForm(guest, "/join", map[string][]string{"csrf": {hiddenCSRF.FindStringSubmatch(body)[1]}, "link": {guestLink.Token}})
	if resp, _ := h.get(guest, "/admin"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("guest dashboard: %d", resp.StatusCode)
	}
	// A message through the monitor's sink counts as the channel's event.
	mon.Sink(h.sink).Deliver(ctx, channels.Inbound{ChatID: "web:main", ID: "x"})
	if _, page := h.get(admin, "/admin"); !strings.Contains(page, `<td class="num" data-label="messages">1</td>`) {
		t.Error("the web channel's message count did not move")
	}
}

func TestDollarsAndSaving(t *testing.T) {
	for _, tc := range []struct {
		mc    int64
		known bool
		want  string
	}{
		{0, true, "$0"}, {1, true, "$0.0000"}, {420_000, true, "$0.0042"}, {150_000_000, true, "$1.50"}, {5, false, "unknown"},
	} {
		if got := dollars(tc.mc, tc.known); got != tc.want {
			t.Errorf("dollars(%d, %v) = %q, want %q", tc.mc, tc.known, got, tc.want)
		}
	}
	for _, tc := range []struct {
		s     mediaregistry.Stats
		want  string
		ratio int
	}{
		{mediaregistry.Stats{}, "—", 0},
		{mediaregistry.Stats{Posted: 1000, Downloaded: 50}, "95.0%", 5},
		{mediaregistry.Stats{Posted: 1000, Downloaded: 3000}, "0.0%", 100},
	} {
		if got, r := saving(tc.s); got != tc.want || r != tc.ratio {
			t.Errorf("saving(%+v) = %q, %d", tc.s, got, r)
		}
	}
}

// The cost tile says unknown when the runs' models have no price, not $0.
func TestCostTile(t *testing.T) {
	for _, tc := range []struct {
		known   int64
		unknown int
		big     string
		small   string
	}{
		{0, 0, "$0", "cost, last 14 days"},
		{0, 3, "unknown", "cost, last 14 days: 3 runs on models without a price"},
		{420_000, 1, "$0.0042 + unknown", "cost, last 14 days, and 1 run on models without a price"},
		{420_000, 0, "$0.0042", "cost, last 14 days"},
	} {
		if got := costTile(tc.known, tc.unknown); got.Big != tc.big || got.Small != tc.small {
			t.Errorf("costTile(%d, %d) = %+v, want %q / %q", tc.known, tc.unknown, got, tc.big, tc.small)
		}
	}
}

// The trigger column names attachments instead of their placeholders.
func TestWithNames(t *testing.T) {
	for in, want := range map[string]string{
		"plain words": "plain words",
		"[Image: cat.png, 1KB, image/png, ref:wb_abcdefghij12] look":             "[cat.png] look",
		"[Voice: 7s, 12KB, audio/ogg, ref:tg_abcdefghij12]":                      "[voice]",
		"[Document: a.pdf, 2KB, application/pdf, ref:tg_abcdefghij12]\nand this": "[a.pdf]\nand this",
	} {
		if got := withNames(in); got != want {
			t.Errorf("withNames(%q) = %q, want %q", in, got, want)
		}
	}
}
