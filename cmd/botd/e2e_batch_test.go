package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// batchAPI is an OpenAI-wire model with the Files and Batch APIs: chat
// completions stream as taskModel's do; a submitted batch stays
// in_progress until released, then its output file answers each request
// with the digest.
type batchAPI struct {
	chat *taskModel
	srv  *httptest.Server

	mu       sync.Mutex
	inputs   map[string]string // file id → JSONL
	batches  map[string]string // batch id → input file id
	released bool
	polls    int
}

const digestAnswer = "Weekly digest (from the batch)."

func newBatchAPI(t *testing.T) *batchAPI {
	a := &batchAPI{chat: newTaskModel(t), inputs: map[string]string{}, batches: map[string]string{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *batchAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case p == "/chat/completions":
		a.mu.Unlock()
		a.chat.serve(w, r)
		a.mu.Lock()
	case p == "/files" && r.Method == http.MethodPost:
		f, _, err := r.FormFile("file")
		if err != nil || r.FormValue("purpose") != "batch" {
			http.Error(w, `{"error":{"message":"bad upload"}}`, http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(f)
		id := fmt.Sprintf("file-in-%d", len(a.inputs)+1)
		a.inputs[id] = string(b)
		fmt.Fprintf(w, `{"id":%q,"object":"file","purpose":"batch"}`, id)
	case p == "/batches" && r.Method == http.MethodPost:
		var req struct {
			InputFileID string `json:"input_file_id"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		id := fmt.Sprintf("batch_%d", len(a.batches)+1)
		a.batches[id] = req.InputFileID
		fmt.Fprintf(w, `{"id":%q,"object":"batch","status":"validating","input_file_id":%q}`, id, req.InputFileID)
	case strings.HasPrefix(p, "/batches/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(p, "/batches/")
		if _, ok := a.batches[id]; !ok {
			http.Error(w, `{"error":{"message":"no such batch"}}`, http.StatusNotFound)
			return
		}
		a.polls++
		if !a.released {
			fmt.Fprintf(w, `{"id":%q,"object":"batch","status":"in_progress"}`, id)
			return
		}
		fmt.Fprintf(w, `{"id":%q,"object":"batch","status":"completed","output_file_id":"file-out-%s"}`, id, id)
	case strings.HasPrefix(p, "/files/file-out-") && strings.HasSuffix(p, "/content"):
		id := strings.TrimSuffix(strings.TrimPrefix(p, "/files/file-out-"), "/content")
		for _, line := range strings.Split(strings.TrimSpace(a.inputs[a.batches[id]]), "\n") {
			var in struct {
				CustomID string `json:"custom_id"`
			}
			json.Unmarshal([]byte(line), &in)
			body := fmt.Sprintf(`{"id":"chatcmpl-b","object":"chat.completion","model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230}}`, digestAnswer)
			fmt.Fprintf(w, `{"id":"r1","custom_id":%q,"response":{"status_code":200,"body":%s},"error":null}`+"\n", in.CustomID, body)
		}
	case strings.HasPrefix(p, "/files/") && r.Method == http.MethodDelete:
		fmt.Fprint(w, `{"deleted":true}`)
	default:
		http.Error(w, `{"error":{"message":"not here"}}`, http.StatusNotFound)
	}
}

func (a *batchAPI) state() (batches, polls int, input string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, in := range a.inputs {
		input = in
	}
	return len(a.batches), a.polls, input
}

func (a *batchAPI) release() {
	a.mu.Lock()
	a.released = true
	a.mu.Unlock()
}

// A task with batch: true goes to the fake OpenAI Batch API; while it
// runs, the group's question is answered at once; botd is killed and
// started again, and the batch's answer reaches the chat once, billed at
// half price, without the task being handed to the interactive model.
func TestBatchTaskEndToEnd(t *testing.T) {
	api := newBatchAPI(t)
	r := &agentRig{dir: t.TempDir(), tg: telegramtest.New(t)}
	r.proxy = newStallProxy(t, r.tg.URL())
	cfg := strings.Replace(agentConfig, "log_level: debug\n", "log_level: debug\nscheduler: {batch_poll: 1s}\n", 1)
	writeFile(t, filepath.Join(r.dir, "botd.yaml"), fmt.Sprintf(cfg, telegramtest.Token, r.proxy.srv.URL, "openai", api.srv.URL+"/v1", "gpt-4.1"))
	host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "scheduled tasks marked batch use the provider's batch API")
	c := mcpStdio(t, r.dir, "botd.yaml", "family")
	res := callTool(t, c, "schedule_task", map[string]any{"prompt": "Write the weekly digest.", "schedule": map[string]any{"in": "1s"}, "batch": true})
	if out := resultText(res); res.IsError || !strings.Contains(out, "batch (answered within hours") {
		t.Fatalf("schedule_task: %s", out)
	}
	testwait.Within(t, 60*time.Second, "one batch submitted and polled", func() bool { n, polls, _ := api.state(); return n == 1 && polls >= 1 })
	_, _, input := api.state()
	if !strings.Contains(input, "Write the weekly digest.") || !strings.Contains(input, `"url":"/v1/chat/completions"`) {
		t.Fatalf("batch input: %.400s", input)
	}
	askMarker(t, r, 2) // answered while the batch runs
	host.kill()

	api.release()
	host = startBotd(t, r.dir, "run", "--config", "botd.yaml")
	testwait.Within(t, 60*time.Second, "len(r.answers(digestAnswer)) > 0", func() bool { return len(r.answers(digestAnswer)) > 0 })
	askMarker(t, r, 3)
	if n := len(r.answers(digestAnswer)); n != 1 {
		t.Errorf("the digest arrived %d times, want 1", n)
	}
	if n, _, _ := api.state(); n != 1 {
		t.Errorf("%d batches submitted, want 1 (the restart polls the same one)", n)
	}
	for _, req := range api.chat.Requests() {
		if strings.Contains(newText([]byte(req)), "Scheduled task #") {
			t.Errorf("the interactive model was handed the batch task")
		}
	}
	host.stop(t)
	out, code := runCLI(t, r.dir, "usage", "--config", "botd.yaml")
	// gpt-4.1 lists at $2/$8 per MTok: 1200 in, 30 out is $0.00264, half $0.0013.
	if code != 0 || !strings.Contains(out, "gpt-4.1") || !strings.Contains(out, "1200") || !strings.Contains(out, "0.0013 USD") {
		t.Errorf("botd usage does not show the batch's tokens:\n%s", out)
	}
}
