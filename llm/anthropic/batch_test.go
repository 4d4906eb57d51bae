package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/anthropic"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/providers"
)

// batchAPI is a loopback Message Batches API. A created batch is
// in_progress until the test moves it with put or end; an ended batch
// serves testdata/batch_results.jsonl. Nothing depends on time.
type batchAPI struct {
	srv     *llmtest.Server
	results []byte
	mu      sync.Mutex
	n       int
	batches map[string]string // id -> message_batch JSON
}

const batchesPath = "/v1/messages/batches"

func newBatchAPI(t *testing.T) *batchAPI {
	t.Helper()
	results, err := os.ReadFile("testdata/batch_results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f := &batchAPI{results: results, batches: map[string]string{}}
	f.srv = llmtest.NewServer(t, http.HandlerFunc(f.serve))
	return f
}

func (f *batchAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rest, isBatch := strings.CutPrefix(r.URL.Path, batchesPath)
	id, action, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	obj, known := f.batches[id]
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/files":
		fmt.Fprint(w, `{"id":"file_1","type":"file","filename":"x","mime_type":"image/png","size_bytes":1}`)
	case !isBatch:
		http.NotFound(w, r)
	case r.Method == http.MethodPost && rest == "":
		f.n++
		id = fmt.Sprintf("msgbatch_%02d", f.n)
		f.batches[id] = f.object(id, "in_progress", "")
		fmt.Fprint(w, f.batches[id])
	case !known:
		// Vendors echo what they were sent; the key must not get through.
		notFound(w, "batch "+id+" not found for key "+llmtest.APIKey)
	case r.Method == http.MethodGet && action == "":
		fmt.Fprint(w, obj)
	case r.Method == http.MethodGet && action == "results":
		if !strings.Contains(obj, `"ended"`) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"type":"error","error":{"type":"invalid_request_error","message":"batch has not ended"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/binary")
		w.Write(f.results)
	case r.Method == http.MethodPost && action == "cancel":
		if strings.Contains(obj, `"ended"`) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"type":"error","error":{"type":"invalid_request_error","message":"batch has already ended"}}`)
			return
		}
		f.batches[id] = f.object(id, "canceling", "")
		fmt.Fprint(w, f.batches[id])
	default:
		notFound(w, "no route")
	}
}

func notFound(w http.ResponseWriter, msg string) {
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":%q}}`, msg)
}

// object renders a message_batch; extra is spliced in to override fields.
func (f *batchAPI) object(id, status, extra string) string {
	resultsURL := "null"
	if status == "ended" {
		resultsURL = fmt.Sprintf("%q", f.srv.URL+batchesPath+"/"+id+"/results")
	}
	return fmt.Sprintf(`{"id":%q,"type":"message_batch","processing_status":%q,`+
		`"request_counts":{"processing":0,"succeeded":2,"errored":1,"canceled":1,"expired":1},`+
		`"created_at":"2026-11-23T09:00:00Z","expires_at":"2026-11-24T09:00:00Z","archived_at":null,"cancel_initiated_at":null,"ended_at":null,`+
		`"results_url":%s%s}`, id, status, resultsURL, extra)
}

// put replaces batch id as the API reports it.
func (f *batchAPI) put(id, obj string) {
	f.mu.Lock()
	f.batches[id] = obj
	f.mu.Unlock()
}

func (f *batchAPI) end(id string) { f.put(id, f.object(id, "ended", "")) }

func newBatcher(api *batchAPI, opts ...anthropic.Option) *anthropic.Provider {
	return anthropic.New(llmtest.APIKey, api.srv.URL, api.srv.Client(), opts...)
}

func batchItems(t *testing.T) []llm.BatchItem {
	t.Helper()
	canonical := llmtest.CanonicalRequest(t, model, t.TempDir())
	canonical.ReasoningBudget = 2048
	return []llm.BatchItem{
		{ID: "q-simple", Req: llmtest.SimpleRequest(model)()},
		{ID: "q-canonical", Req: canonical},
		{ID: "q-search", Req: lazyRequest(model)},
	}
}

// Each item becomes {"custom_id", "params"} holding the Messages body the
// streaming path builds, without "stream"; the batch goes to the
// collection with the key and version, and without the files beta when
// no request refers to a file.
func TestBatchSubmit(t *testing.T) {
	api := newBatchAPI(t)
	id := llmtest.Submit(t, newBatcher(api), batchItems(t))
	if id != "msgbatch_01" {
		t.Errorf("id %q, want msgbatch_01", id)
	}
	posts := api.srv.ByPath(http.MethodPost, batchesPath)
	if len(posts) != 1 {
		t.Fatalf("%d POST %s, want 1", len(posts), batchesPath)
	}
	got := posts[0]
	for h, want := range map[string]string{"X-Api-Key": llmtest.APIKey, "Anthropic-Version": anthropic.APIVersion, "Content-Type": "application/json", "Anthropic-Beta": ""} {
		if v := got.Header.Get(h); v != want {
			t.Errorf("header %s = %q, want %q", h, v, want)
		}
	}
	if strings.Contains(string(got.Body), `"stream"`) {
		t.Error(`batch params carry "stream"`)
	}
	llmtest.Golden(t, "testdata/batch_request.golden.json", llmtest.Indent(t, got.Body))
}

// A request referring to an uploaded file makes the whole batch carry the
// files beta: its requests run later under the batch's headers.
func TestBatchFilesBeta(t *testing.T) {
	api := newBatchAPI(t)
	up, _ := llmtest.Uploads(t)
	photo, _ := llmtest.MediaFile(t, "photo.png", 4096)
	items := []llm.BatchItem{
		{ID: "plain", Req: llmtest.SimpleRequest(model)()},
		{ID: "photo", Req: photoRequest(photo)},
	}
	llmtest.Submit(t, newBatcher(api, providers.WithFiles(up)), items)
	got := api.srv.ByPath(http.MethodPost, batchesPath)[0]
	if v := got.Header.Get("anthropic-beta"); v != anthropic.FilesBeta {
		t.Errorf("anthropic-beta %q, want %q", v, anthropic.FilesBeta)
	}
	if !strings.Contains(string(got.Body), `"file_id":"file_1"`) {
		t.Errorf("batch does not refer to the uploaded file: %s", got.Body)
	}
}

// Items that no vendor would accept fail before any request is sent.
func TestBatchSubmitRejectsItems(t *testing.T) {
	req := llmtest.SimpleRequest(model)()
	tests := []struct {
		name  string
		items []llm.BatchItem
	}{
		{"none", nil},
		{"empty id", []llm.BatchItem{{ID: "", Req: req}}},
		{"id with a dot", []llm.BatchItem{{ID: "a.b", Req: req}}},
		{"id over 64", []llm.BatchItem{{ID: strings.Repeat("x", 65), Req: req}}},
		{"repeated id", []llm.BatchItem{{ID: "a", Req: req}, {ID: "a", Req: req}}},
		{"no request", []llm.BatchItem{{ID: "a"}}},
		{"missing media", []llm.BatchItem{{ID: "a", Req: &llm.Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.ImageFile("image/png", "/nonexistent.png")}}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newBatchAPI(t)
			_, err := newBatcher(api).SubmitBatch(t.Context(), tt.items)
			if e := llmtest.ErrorOf(t, err); e.Kind != llm.KindBadRequest || e.Provider != "anthropic" {
				t.Errorf("err %+v, want bad_request from anthropic", e)
			}
			if n := len(api.srv.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// A batch polls running until it ends; its results then map every
// custom id to a Result (text; thinking, redacted thinking, text and tool
// calls) or a classified error (errored, expired, cancelled), priced at
// half the list price of the model that answered.
func TestBatchLifecycle(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	id := llmtest.Submit(t, p, batchItems(t))
	if st := llmtest.Poll(t, p, id); st != llm.BatchRunning {
		t.Fatalf("state %s before the batch ended, want running", st)
	}
	api.end(id)
	if st := llmtest.Poll(t, p, id); st != llm.BatchEnded {
		t.Fatalf("state %s after it ended, want ended", st)
	}
	got, err := p.BatchResults(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	res := api.srv.ByPath(http.MethodGet, batchesPath+"/"+id+"/results")
	if len(res) != 1 || res[0].Header.Get("X-Api-Key") != llmtest.APIKey || res[0].Header.Get("Anthropic-Version") != anthropic.APIVersion {
		t.Fatalf("results read %d times, or without the key and version", len(res))
	}
	llmtest.Golden(t, "testdata/batch_results.golden.json", llmtest.BatchOutcomes(t, got))

	if r := got["q-text"].Result; r == nil || r.Text() != "Sunny in Paris, 18 °C." || r.StopReason != llm.StopEnd {
		t.Errorf("q-text: %+v", got["q-text"])
	}
	tool := got["q-tool"].Result
	if tool == nil || tool.StopReason != llm.StopToolUse || len(tool.ToolCalls()) != 2 {
		t.Fatalf("q-tool: %+v", got["q-tool"])
	}
	if tc := tool.ToolCalls()[0]; tc.ID != "toolu_01" || tc.Name != "get_weather" || string(tc.Args) != `{"location":"Paris, FR","unit":"celsius"}` {
		t.Errorf("tool call %+v", tc)
	}
	if p0, p1 := tool.Parts[0], tool.Parts[1]; p0.Signature != "EqQBCgIYAhIM-sig" || p0.Redacted || !p1.Redacted || p1.Signature != "EmwKAhgBEgy-redacted" {
		t.Errorf("reasoning parts %+v %+v", p0, p1)
	}
	// A batched reply that searched its tools: the same vendor parts and
	// Loaded as the reply streamed.
	search := got["q-search"].Result
	if search == nil || !slices.Equal(search.Loaded, []string{"get_weather"}) || len(search.Parts) != 3 ||
		search.Parts[0].Kind != llm.PartVendor || search.Parts[1].Kind != llm.PartVendor || len(search.ToolCalls()) != 1 {
		t.Errorf("q-search: %+v", got["q-search"])
	} else if raw := string(search.Parts[0].Raw); !strings.Contains(raw, `"input":{"query":"weather in a city"}`) {
		t.Errorf("server_tool_use kept as %s", raw)
	}
	for cid, want := range map[string]struct {
		kind  llm.ErrorKind
		retry bool
		code  string
	}{
		"q-bad":  {llm.KindBadRequest, false, "invalid_request_error"},
		"q-late": {llm.KindTimeout, true, "expired"},
		"q-stop": {llm.KindCancelled, false, "canceled"},
	} {
		o := got[cid]
		if o.Result != nil {
			t.Errorf("%s has a result", cid)
			continue
		}
		if e := llmtest.ErrorOf(t, o.Err); e.Kind != want.kind || e.Retryable != want.retry || e.Code != want.code || e.Provider != "anthropic" {
			t.Errorf("%s: %+v, want %s retryable=%v code %s", cid, e, want.kind, want.retry, want.code)
		}
	}
}

// Batches bill at half the list price: 11 input, 7 output, 100
// cache-read and 1 cache-write tokens of claude-sonnet-4-5 list at
// 17,175 micro-cents, so the batch costs 8,587.5, rounded up to 8,588.
func TestBatchCostIsHalfPrice(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	id := llmtest.Submit(t, p, batchItems(t))
	api.end(id)
	got, err := p.BatchResults(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	u := got["q-text"].Result.Usage
	list := llm.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	llm.DefaultPricing.Apply("claude-sonnet-4-5", &list)
	if list.CostMicrocents != 17175 || u.InputTokens != 11 || u.OutputTokens != 7 || u.CacheReadTokens != 100 || u.CacheWriteTokens != 1 {
		t.Fatalf("fixture usage %+v lists at %d, want 17175", u, list.CostMicrocents)
	}
	if !u.CostKnown || u.CostMicrocents != 8588 {
		t.Errorf("batch cost %d (known %v), want 8588", u.CostMicrocents, u.CostKnown)
	}
}

// Only the batch id survives a restart: a new Provider polls and reads
// the results of a batch an earlier one submitted.
func TestBatchRestartRecovery(t *testing.T) {
	api := newBatchAPI(t)
	id := llmtest.Submit(t, newBatcher(api), batchItems(t))
	api.end(id)

	again := newBatcher(api)
	if st := llmtest.Poll(t, again, id); st != llm.BatchEnded {
		t.Fatalf("state %s, want ended", st)
	}
	got, err := again.BatchResults(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 || got["q-text"].Result == nil {
		t.Errorf("%d outcomes after a restart, want 6 with q-text answered", len(got))
	}
}

// Cancelling a running batch moves it to canceling, which still polls as
// running (requests in flight may finish); cancelling one that has ended
// is not an error; an unknown one is.
func TestBatchCancel(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	id := llmtest.Submit(t, p, batchItems(t))
	if err := p.CancelBatch(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if c := api.srv.ByPath(http.MethodPost, batchesPath+"/"+id+"/cancel"); len(c) != 1 || c[0].Header.Get("X-Api-Key") != llmtest.APIKey {
		t.Fatalf("cancel requests: %d", len(c))
	}
	if st := llmtest.Poll(t, p, id); st != llm.BatchRunning {
		t.Errorf("canceling batch polls %s, want running", st)
	}
	api.end(id)
	if err := p.CancelBatch(t.Context(), id); err != nil {
		t.Errorf("cancelling an ended batch: %v", err)
	}
	if e := llmtest.ErrorOf(t, p.CancelBatch(t.Context(), "msgbatch_gone")); e.Status != http.StatusNotFound {
		t.Errorf("cancelling an unknown batch: %+v", e)
	}
}

// The processing status decides the state: an ended batch whose items
// all expired still has results to read; one whose results were archived
// (or never appeared) has failed and BatchResults says why.
func TestBatchStates(t *testing.T) {
	tests := []struct {
		name, status, extra string
		want                llm.BatchState
	}{
		// JSON null does not override a field for encoding/json, so the
		// case without results is spelled out.
		{"ended without results", "", `{"id":"msgbatch_x","type":"message_batch","processing_status":"ended","results_url":null}`, llm.BatchFailed},
		{"in progress", "in_progress", "", llm.BatchRunning},
		{"canceling", "canceling", "", llm.BatchRunning},
		{"ended", "ended", "", llm.BatchEnded},
		{"ended, all expired", "ended", `,"request_counts":{"processing":0,"succeeded":0,"errored":0,"canceled":0,"expired":5}`, llm.BatchEnded},
		{"archived", "ended", `,"archived_at":"2026-12-22T09:00:00Z"`, llm.BatchFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newBatchAPI(t)
			p := newBatcher(api)
			obj := tt.extra
			if tt.status != "" {
				obj = api.object("msgbatch_x", tt.status, tt.extra)
			}
			api.put("msgbatch_x", obj)
			if st := llmtest.Poll(t, p, "msgbatch_x"); st != tt.want {
				t.Fatalf("state %s, want %s", st, tt.want)
			}
			_, err := p.BatchResults(t.Context(), "msgbatch_x")
			if (err == nil) != (tt.want == llm.BatchEnded) {
				t.Fatalf("BatchResults err %v in state %s", err, tt.want)
			}
			if err != nil {
				llmtest.ErrorOf(t, err)
			}
		})
	}
}

// An unknown status is an error rather than a guess.
func TestBatchUnknownStatus(t *testing.T) {
	api := newBatchAPI(t)
	api.put("msgbatch_x", api.object("msgbatch_x", "paused", ""))
	_, err := newBatcher(api).PollBatch(t.Context(), "msgbatch_x")
	if e := llmtest.ErrorOf(t, err); e.Kind != llm.KindUnknown || !strings.Contains(e.Message, "paused") {
		t.Errorf("err %+v", e)
	}
}

// Polling a batch the vendor does not know is a classified 404 whose
// message never carries the key the vendor echoed.
func TestBatchPollNotFound(t *testing.T) {
	api := newBatchAPI(t)
	_, err := newBatcher(api).PollBatch(context.Background(), "msgbatch_gone")
	e := llmtest.ErrorOf(t, err)
	if e.Kind != llm.KindBadRequest || e.Retryable || e.Status != http.StatusNotFound || e.Code != "not_found_error" || e.Provider != "anthropic" {
		t.Errorf("err %+v, want a non-retryable bad_request 404 from anthropic", e)
	}
	if strings.Contains(err.Error(), llmtest.APIKey) {
		t.Errorf("key leaked: %v", err)
	}
	if got := api.srv.Last(t).Path; got != batchesPath+"/msgbatch_gone" {
		t.Errorf("polled %s", got)
	}
}
