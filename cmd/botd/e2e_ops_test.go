package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ops"
	"github.com/botd-dev/botd/ops/opstest"
)

// opsOnAnyPort has a test's botd serve /healthz, /readyz and /metrics on
// a free port (the default one may be another test's).
const opsOnAnyPort = "\nops: {listen: \"127.0.0.1:0\"}\n"

var opsServing = regexp.MustCompile(`ops: serving /healthz, /readyz and /metrics" addr=(\S+)`)

// opsURL waits for p to serve its health and metrics and returns where.
func opsURL(t *testing.T, p *proc) string {
	t.Helper()
	p.waitLog(t, "ops: serving /healthz")
	m := opsServing.FindStringSubmatch(p.Logs())
	if m == nil {
		t.Fatalf("no ops address in the log:\n%s", p.Logs())
	}
	return "http://" + m[1]
}

type readyz struct {
	Ready  bool   `json:"ready"`
	Reason string `json:"reason"`
}

func getReadyz(t *testing.T, base string) (int, readyz) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r readyz
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("/readyz answered %d %q, not JSON: %v", resp.StatusCode, body, err)
	}
	return resp.StatusCode, r
}

func healthz(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A question about a photo asked in Telegram and answered by the model
// moves botd's counters, as Prometheus's own parser reads /metrics: the
// messages received, the photo posted and downloaded, the run answered,
// the model calls with their tokens and cost.
// Until the channel is connected /readyz says it is not; then 200.
func TestMetricsAfterAQuestionIsAnswered(t *testing.T) {
	const answer = "Metrics hello."
	r := newAgentRig(t, "anthropic", answer)
	// Telegram's getMe is held until the test lets it through: the
	// channel is connecting meanwhile.
	gate, asked := make(chan struct{}), make(chan struct{}, 1)
	tg, _ := url.Parse(r.tg.URL())
	fwd := httputil.NewSingleHostReverseProxy(tg)
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/getMe") {
			select {
			case asked <- struct{}{}:
			default:
			}
			select {
			case <-gate:
			case <-req.Context().Done():
				return
			}
		}
		fwd.ServeHTTP(w, req)
	}))
	t.Cleanup(held.Close)
	writeFile(t, filepath.Join(r.dir, "botd.yaml"),
		fmt.Sprintf(agentConfig, telegramtest.Token, held.URL, "anthropic", r.model.srv.URL, "claude-sonnet-4-5")+opsOnAnyPort)
	host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	base := opsURL(t, host)
	select {
	case <-asked:
	case <-host.done:
		t.Fatalf("botd exited before asking getMe:\n%s", host.Logs())
	case <-time.After(60 * time.Second):
		t.Fatal("botd did not ask Telegram's getMe")
	}
	if code := healthz(t, base); code != http.StatusOK {
		t.Fatalf("/healthz while connecting = %d, want 200", code)
	}
	if code, rz := getReadyz(t, base); code != http.StatusServiceUnavailable || rz.Ready ||
		rz.Reason != "channel telegram is not connected (starting)" {
		t.Fatalf("/readyz while Telegram connects = %d %+v, want 503 naming telegram", code, rz)
	}
	close(gate)
	host.waitLog(t, "botd running")
	if code, rz := getReadyz(t, base); code != http.StatusOK || !rz.Ready || rz.Reason != "" {
		t.Fatalf("/readyz once running = %d %+v, want 200 ready", code, rz)
	}

	before := opstest.Scrape(t, base+"/metrics")
	if v, _ := before.Value("botd_messages_received_total", "network", "telegram"); v != 0 {
		t.Fatalf("messages received before any was sent: %v", v)
	}
	for _, g := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"botd_lease_active", nil, 1},
		{"botd_lease_epoch", nil, 1},
		{"botd_channel_connected", []string{"channel", "telegram"}, 1},
		{"botd_agent_queue_depth", nil, 0},
	} {
		if v, ok := before.Value(g.name, g.labels...); !ok || v != g.want {
			t.Errorf("%s%v = %v (found %v), want %v", g.name, g.labels, v, ok, g.want)
		}
	}

	// A photo, then the question about it: the model fetches the photo
	// (fetch_media), then answers.
	photo := noisyJPEG(t, 120, 90)
	r.tg.AddFile(telegramtest.File{ID: "asked", Data: photo})
	r.tg.Enqueue(photoUpdate(-100, 100, "asked", len(photo), "look at this"),
		telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), 200, "@Andy what is in the photo?"))
	testwait.Within(t, 60*time.Second, "the answer in the chat", func() bool { return len(r.answers(answer)) > 0 })
	// The run is counted when its record is saved, just after the answer
	// went out; a scrape reads each series at its own moment (Prometheus
	// promises no snapshot across them), so wait until every one reads
	// its final value: counters only grow, so this cannot pass early.
	want := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"botd_messages_received_total", []string{"network", "telegram"}, 2},
		{"botd_media_posted_total", []string{"network", "telegram"}, 1},
		{"botd_media_posted_bytes_total", []string{"network", "telegram"}, float64(len(photo))},
		{"botd_media_fetches_total", []string{"network", "telegram", "result", "downloaded"}, 1},
		{"botd_media_downloaded_bytes_total", []string{"network", "telegram"}, float64(len(photo))},
		{"botd_runs_total", []string{"outcome", "answered"}, 1},
		{"botd_run_duration_seconds", nil, 1},
		// The fetch_media turn and the answer: the fake model's usage.
		{"botd_model_calls_total", []string{"provider", "fake", "model", "claude-sonnet-4-5", "outcome", "succeeded"}, 2},
		{"botd_model_tokens_total", []string{"model", "claude-sonnet-4-5", "kind", "input"}, 100 + 200},
		{"botd_model_tokens_total", []string{"model", "claude-sonnet-4-5", "kind", "output"}, 10 + 8},
	}
	var after opstest.Families
	var wrong []string
	defer func() {
		if len(wrong) > 0 {
			t.Logf("the last scrape differed: %s", strings.Join(wrong, "; "))
		}
	}()
	testwait.Within(t, 30*time.Second, "every counter at its value after the answer", func() bool {
		after, wrong = opstest.Scrape(t, base+"/metrics"), nil
		for _, c := range want {
			if v, ok := after.Value(c.name, c.labels...); !ok || v != c.want {
				wrong = append(wrong, fmt.Sprintf("%s%v = %v (found %v), want %v", c.name, c.labels, v, ok, c.want))
			}
		}
		if v, ok := after.Value("botd_model_cost_usd_total", "model", "claude-sonnet-4-5"); !ok || v <= 0 {
			wrong = append(wrong, fmt.Sprintf("botd_model_cost_usd_total = %v (found %v), want the priced calls' cost", v, ok))
		}
		return len(wrong) == 0
	})
	if _, ok := after["go_goroutines"]; !ok {
		t.Errorf("the Go runtime's series are missing: %s", after.Names())
	}
	host.stop(t)
}

// Two instances on one Postgres: the active one is ready; the one
// standing by answers /readyz 503 with the active one's name, and its
// /metrics say it does not hold the lease. Both are healthy.
func TestReadyzOnAStandby(t *testing.T) {
	dsn := pgtest.DSN(t)
	dirs := map[string]string{}
	procs := map[string]*proc{}
	for _, id := range []string{"alpha", "beta"} {
		dirs[id] = t.TempDir()
		writeFile(t, filepath.Join(dirs[id], "botd.yaml"), fmt.Sprintf(leaseConfig, dsn, id)+opsOnAnyPort)
	}
	procs["alpha"] = startBotd(t, dirs["alpha"], "run", "--config", "botd.yaml")
	procs["alpha"].waitLog(t, "botd running")
	procs["beta"] = startBotd(t, dirs["beta"], "run", "--config", "botd.yaml")
	procs["beta"].waitLog(t, "standing by: serving the dashboard")
	alpha, beta := opsURL(t, procs["alpha"]), opsURL(t, procs["beta"])

	if code, rz := getReadyz(t, alpha); code != http.StatusOK || !rz.Ready {
		t.Errorf("the active instance's /readyz = %d %+v, want 200", code, rz)
	}
	if code, rz := getReadyz(t, beta); code != http.StatusServiceUnavailable || rz.Ready || rz.Reason != "standby: alpha is active" {
		t.Errorf("the standby's /readyz = %d %+v, want 503 \"standby: alpha is active\"", code, rz)
	}
	for id, base := range map[string]string{"alpha": alpha, "beta": beta} {
		if code := healthz(t, base); code != http.StatusOK {
			t.Errorf("%s's /healthz = %d, want 200", id, code)
		}
	}
	for _, c := range []struct {
		base   string
		name   string
		want   float64
		absent bool
	}{
		{alpha, "botd_lease_active", 1, false},
		{alpha, "botd_lease_epoch", 1, false},
		{beta, "botd_lease_active", 0, false},
		{beta, "botd_lease_epoch", 1, false},
		// A standby runs no agent: it has no queue to show.
		{beta, "botd_agent_queue_depth", 0, true},
	} {
		v, ok := opstest.Scrape(t, c.base+"/metrics").Value(c.name)
		if ok == c.absent || v != c.want {
			t.Errorf("%s %s = %v (found %v), want %v (absent %v)", c.base, c.name, v, ok, c.want, c.absent)
		}
	}
	procs["beta"].stop(t)
	procs["alpha"].stop(t)
}

// An ops.listen the config names must be served: taken, botd does not
// start and says which setting. The default address taken (a second botd
// on the host) is logged and botd runs without it.
func TestOpsListenTaken(t *testing.T) {
	t.Run("configured", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "botd.yaml"), webOnlyConfig+fmt.Sprintf("ops: {listen: %q}\n", ln.Addr().String()))
		out, code := runCLI(t, dir, "run", "--config", "botd.yaml")
		if code != 1 || !strings.Contains(out, "ops.listen") || !strings.Contains(out, "address already in use") {
			t.Fatalf("botd run with ops.listen taken: exit %d:\n%s", code, out)
		}
		if strings.Contains(out, "botd running") {
			t.Errorf("botd served although its ops.listen was taken:\n%s", out)
		}
	})
	t.Run("default", func(t *testing.T) {
		ln, err := net.Listen("tcp", ops.DefaultListen)
		if err != nil {
			// Someone else holds it, and may let go at any moment.
			t.Skipf("cannot hold %s for the test: %v", ops.DefaultListen, err)
		}
		defer ln.Close()
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "botd.yaml"), webOnlyConfig)
		p := startBotd(t, dir, "run", "--config", "botd.yaml")
		p.waitLog(t, "botd running")
		if !strings.Contains(p.Logs(), "ops: the default address is taken") || strings.Contains(p.Logs(), "ops: serving") {
			t.Errorf("the default ops address taken was not said, or served anyway:\n%s", p.Logs())
		}
		p.stop(t)
	})
}
