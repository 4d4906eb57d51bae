package ops

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/ops/opstest"
	"github.com/botd-dev/botd/store"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		listen string
		ok     bool
	}{
		{DefaultListen, true},
		{"", true}, // off
		{"0.0.0.0:9464", true},
		{"[::1]:9464", true},
		{":9464", true},
		{"127.0.0.1:0", true},
		{"127.0.0.1", false},
		{"127.0.0.1:http", false},
		{"127.0.0.1:70000", false},
		{"127.0.0.1:-1", false},
		{"not an address", false},
	} {
		err := Config{Listen: tc.listen}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("Validate(listen %q) = %v, want ok=%v", tc.listen, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "ops.listen") {
			t.Errorf("Validate(listen %q) = %q, does not name ops.listen", tc.listen, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("the default config is invalid: %v", err)
	}
}

// sink is the agent's side: it stores, or fails to.
type sink struct {
	mu   sync.Mutex
	got  []channels.Inbound
	fail error
}

func (s *sink) Registered(string) bool { return true }
func (s *sink) Deliver(_ context.Context, in channels.Inbound) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.got = append(s.got, in)
	return nil
}
func (s *sink) Migrated(context.Context, string, string) {}

// serve starts the server on a free loopback port.
func serve(t *testing.T, m *Metrics, ready Readiness) string {
	t.Helper()
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, m, ready, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(s.Close)
	return "http://" + s.Addr()
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// What the parts report reaches /metrics, parsed as Prometheus parses
// it, with botd's names and labels; a failed delivery and an edit are
// not counted as received.
func TestMetricsMoveAndParse(t *testing.T) {
	m := New()
	base := serve(t, m, func() (bool, string) { return true, "" })
	before := opstest.Scrape(t, base+"/metrics")
	if _, ok := before.Value("botd_messages_received_total"); ok {
		t.Errorf("a counter with labels shows before anything was counted")
	}
	for _, want := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total"} {
		if _, ok := before[want]; !ok {
			t.Errorf("the Go runtime's and process's series lack %s: %s", want, before.Names())
		}
	}

	st := &sink{}
	s := m.Sink(st)
	ctx := context.Background()
	photo := mediaregistry.MediaReference{ID: "tg_1", Channel: "telegram", Size: 1500}
	voice := mediaregistry.MediaReference{ID: "tg_2", Channel: "telegram", Size: -1} // size unknown
	for _, in := range []channels.Inbound{
		{ChatID: "telegram:-100", ID: "1", Text: "hi"},
		{ChatID: "telegram:-100", ID: "2", Refs: []mediaregistry.MediaReference{photo, voice}},
		{ChatID: "slack:C1", ID: "3", Text: "hello"},
		{ChatID: "telegram:-100", ID: "1", Text: "hi!", Edit: true},
	} {
		if err := s.Deliver(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	st.fail = errors.New("database is locked")
	if err := s.Deliver(ctx, channels.Inbound{ChatID: "telegram:-100", ID: "4"}); err == nil {
		t.Fatal("the sink's error was not passed on")
	}
	if len(st.got) != 4 {
		t.Fatalf("the sink got %d messages, want 4", len(st.got))
	}
	m.MediaFetched("telegram", "downloaded")
	m.MediaFetched("telegram", "cached")
	m.MediaDownloaded("telegram", 1500)
	now := time.Now()
	m.RunDone(store.AgentRun{Outcome: "answered", Started: now.Add(-2 * time.Second), Finished: now, Attempts: []store.Attempt{
		{Provider: "fake", Model: "m1", Outcome: "failed"},
		{Provider: "fake", Model: "m1", Outcome: "succeeded", Input: 200, Output: 8, CacheRead: 50, CostMicrocents: 3_000_000, CostKnown: true},
	}})
	m.RunDone(store.AgentRun{Outcome: "model_failed"})
	m.BoxKilled("memory")
	m.WatchLease(func() LeaseState { return LeaseState{Active: true, Epoch: 7} })
	m.WatchChannels(func() []ChannelState {
		return []ChannelState{{Name: "telegram", Connected: true}, {Name: "whatsapp"}}
	})
	m.WatchQueue(func() QueueState { return QueueState{Running: 2, Waiting: 3} })

	fs := opstest.Scrape(t, base+"/metrics")
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"botd_messages_received_total", []string{"network", "telegram"}, 2},
		{"botd_messages_received_total", []string{"network", "slack"}, 1},
		{"botd_media_posted_total", []string{"network", "telegram"}, 2},
		{"botd_media_posted_bytes_total", []string{"network", "telegram"}, 1500},
		{"botd_media_fetches_total", []string{"network", "telegram", "result", "downloaded"}, 1},
		{"botd_media_fetches_total", []string{"network", "telegram", "result", "cached"}, 1},
		{"botd_media_downloaded_bytes_total", []string{"network", "telegram"}, 1500},
		{"botd_runs_total", []string{"outcome", "answered"}, 1},
		{"botd_runs_total", []string{"outcome", "model_failed"}, 1},
		{"botd_run_duration_seconds", nil, 1}, // one observation: the other run has no times
		{"botd_model_calls_total", []string{"model", "m1", "outcome", "succeeded"}, 1},
		{"botd_model_calls_total", []string{"model", "m1", "outcome", "failed"}, 1},
		{"botd_model_tokens_total", []string{"provider", "fake", "model", "m1", "kind", "input"}, 200},
		{"botd_model_tokens_total", []string{"model", "m1", "kind", "output"}, 8},
		{"botd_model_tokens_total", []string{"model", "m1", "kind", "cache_read"}, 50},
		{"botd_model_cost_usd_total", []string{"model", "m1"}, 0.03},
		{"botd_box_children_killed_total", []string{"reason", "memory"}, 1},
		{"botd_lease_active", nil, 1},
		{"botd_lease_epoch", nil, 7},
		{"botd_channel_connected", []string{"channel", "telegram"}, 1},
		{"botd_channel_connected", []string{"channel", "whatsapp"}, 0},
		{"botd_agent_runs_in_flight", nil, 2},
		{"botd_agent_queue_depth", nil, 3},
	} {
		got, ok := fs.Value(c.name, c.labels...)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := fs.Value("botd_model_tokens_total", "kind", "cache_write"); ok {
		t.Errorf("a token kind no call used shows as a series")
	}
	for name := range fs {
		if !strings.HasPrefix(name, "botd_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") &&
			!strings.HasPrefix(name, "promhttp_") {
			t.Errorf("series %s is neither botd's nor the runtime's", name)
		}
	}
}

func TestEndpoints(t *testing.T) {
	var ok atomic.Bool
	m := New()
	base := serve(t, m, func() (bool, string) {
		if ok.Load() {
			return true, ""
		}
		return false, "standby: alpha is active"
	})
	type readyz struct {
		Ready  bool   `json:"ready"`
		Reason string `json:"reason"`
	}
	readiness := func(wantCode int) readyz {
		t.Helper()
		code, body, h := get(t, base+"/readyz")
		if code != wantCode {
			t.Fatalf("/readyz = %d %s, want %d", code, body, wantCode)
		}
		if ct := h.Get("Content-Type"); ct != "application/json" {
			t.Errorf("/readyz Content-Type = %q", ct)
		}
		var r readyz
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("/readyz body %q is not JSON: %v", body, err)
		}
		return r
	}
	if r := readiness(http.StatusServiceUnavailable); r.Ready || r.Reason != "standby: alpha is active" {
		t.Errorf("/readyz on a standby = %+v", r)
	}
	ok.Store(true)
	if r := readiness(http.StatusOK); !r.Ready || r.Reason != "" {
		t.Errorf("/readyz when ready = %+v", r)
	}
	if code, body, _ := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}

	// Anything else is refused, and refusing it moves nothing.
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/readyz", http.StatusMethodNotAllowed},
		{http.MethodPut, "/healthz", http.StatusMethodNotAllowed},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/debug/pprof/", http.StatusNotFound},
	} {
		req, err := http.NewRequest(c.method, base+c.path, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s = %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
	// An oversized header is refused before any handler runs.
	req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a 64 KiB header got %d, want 431", resp.StatusCode)
		}
	}
}

// Two Metrics never share a counter: each daemon (and test) has its own
// registry, and the global one is left alone.
func TestRegistriesAreSeparate(t *testing.T) {
	a, b := New(), New()
	a.BoxKilled("cpu")
	fa, err := a.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	fb, err := b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	count := func(fams []*dto.MetricFamily) int {
		n := 0
		for _, f := range fams {
			if f.GetName() == "botd_box_children_killed_total" {
				n += len(f.GetMetric())
			}
		}
		return n
	}
	if count(fa) != 1 || count(fb) != 0 {
		t.Errorf("killed series: a has %d, b has %d; want 1 and 0", count(fa), count(fb))
	}
}
