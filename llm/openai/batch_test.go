package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/openai"
)

// batchAPI is a loopback OpenAI with the Files and Batch APIs. Uploads
// are kept by id; a created batch is validating until the test moves it
// with put; the recorded output and error files are there as file-out
// and file-err. Nothing depends on time.
type batchAPI struct {
	srv         *llmtest.Server
	mu          sync.Mutex
	nfiles      int
	nbatches    int
	files       map[string][]byte
	batches     map[string]string // id -> batch JSON
	rejectBatch bool
}

func newBatchAPI(t *testing.T) *batchAPI {
	t.Helper()
	f := &batchAPI{files: map[string][]byte{}, batches: map[string]string{}}
	for id, path := range map[string]string{"file-out": "testdata/batch_output.jsonl", "file-err": "testdata/batch_errors.jsonl"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f.files[id] = b
	}
	f.srv = llmtest.NewServer(t, http.HandlerFunc(f.serve))
	return f
}

func (f *batchAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && path == "/files":
		f.upload(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/files/") && strings.HasSuffix(path, "/content"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/files/"), "/content")
		b, ok := f.files[id]
		if !ok {
			notFound(w, "No such File object: "+id)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	case r.Method == http.MethodDelete && strings.HasPrefix(path, "/files/"):
		id := strings.TrimPrefix(path, "/files/")
		if _, ok := f.files[id]; !ok {
			notFound(w, "No such File object: "+id)
			return
		}
		delete(f.files, id)
		fmt.Fprintf(w, `{"id":%q,"object":"file","deleted":true}`, id)
	case r.Method == http.MethodPost && path == "/batches":
		f.create(w, r)
	case strings.HasPrefix(path, "/batches/"):
		id, action, _ := strings.Cut(strings.TrimPrefix(path, "/batches/"), "/")
		obj, ok := f.batches[id]
		switch {
		case !ok:
			// Vendors echo what they were sent; the key must not get through.
			notFound(w, "No batch "+id+" for key "+llmtest.APIKey)
		case r.Method == http.MethodGet && action == "":
			fmt.Fprint(w, obj)
		case r.Method == http.MethodPost && action == "cancel":
			var b struct{ Status string }
			json.Unmarshal([]byte(obj), &b)
			if b.Status != "validating" && b.Status != "in_progress" && b.Status != "finalizing" {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":"Cannot cancel a batch with status '%s'.","type":"invalid_request_error","param":null,"code":null}}`, b.Status)
				return
			}
			f.batches[id] = f.object(id, "cancelling", "", "", "")
			fmt.Fprint(w, f.batches[id])
		default:
			notFound(w, "Invalid URL")
		}
	default:
		notFound(w, "Invalid URL")
	}
}

func (f *batchAPI) upload(w http.ResponseWriter, r *http.Request) {
	file, _, err := r.FormFile("file")
	if err != nil || r.FormValue("purpose") == "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"bad upload","type":"invalid_request_error"}}`)
		return
	}
	b, err := io.ReadAll(file)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.nfiles++
	id := fmt.Sprintf("file-in-%d", f.nfiles)
	f.files[id] = b
	fmt.Fprintf(w, `{"id":%q,"object":"file","bytes":%d,"created_at":1795424400,"filename":"batch.jsonl","purpose":%q}`, id, len(b), r.FormValue("purpose"))
}

func (f *batchAPI) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputFileID string `json:"input_file_id"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	if _, ok := f.files[req.InputFileID]; !ok || f.rejectBatch {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"Enqueued token limit reached for gpt-4.1.","type":"invalid_request_error","param":null,"code":"token_limit_exceeded"}}`)
		return
	}
	f.nbatches++
	id := fmt.Sprintf("batch_%02d", f.nbatches)
	f.batches[id] = f.object(id, "validating", req.InputFileID, "", "")
	fmt.Fprint(w, f.batches[id])
}

func notFound(w http.ResponseWriter, msg string) {
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":null}}`, msg)
}

// object renders a batch; empty file ids are null.
func (f *batchAPI) object(id, status, input, output, errs string) string {
	null := func(s string) string {
		if s == "" {
			return "null"
		}
		return fmt.Sprintf("%q", s)
	}
	errors := "null"
	if status == "failed" {
		errors = `{"object":"list","data":[{"code":"invalid_json_line","line":1,"message":"This line is not parseable as valid JSON.","param":null}]}`
	}
	return fmt.Sprintf(`{"id":%q,"object":"batch","endpoint":"/v1/chat/completions","errors":%s,"input_file_id":%s,`+
		`"completion_window":"24h","status":%q,"output_file_id":%s,"error_file_id":%s,"created_at":1795424400,`+
		`"request_counts":{"total":5,"completed":2,"failed":3},"metadata":null}`,
		id, errors, null(input), status, null(output), null(errs))
}

// put sets what the API reports for batch id, keeping its input file.
func (f *batchAPI) put(id, status, output, errs string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b struct {
		InputFileID string `json:"input_file_id"`
	}
	json.Unmarshal([]byte(f.batches[id]), &b)
	f.batches[id] = f.object(id, status, b.InputFileID, output, errs)
}

func (f *batchAPI) end(id string) { f.put(id, "completed", "file-out", "file-err") }

func (f *batchAPI) hasFile(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.files[id]
	return ok
}

func newBatcher(api *batchAPI) *openai.Provider {
	return openai.New(llmtest.APIKey, api.srv.URL+"/v1", api.srv.Client())
}

func batchItems(t *testing.T) []llm.BatchItem {
	t.Helper()
	return []llm.BatchItem{
		{ID: "q-simple", Req: llmtest.SimpleRequest("gpt-4.1")()},
		{ID: "q-canonical", Req: llmtest.CanonicalRequest(t, "gpt-4.1", t.TempDir())},
	}
}

// The items go up as a JSONL file with purpose batch, one line per item
// holding the chat completions body the streaming path builds without
// stream or stream_options; the batch is created over that file for the
// chat completions endpoint and the 24h window.
func TestBatchSubmit(t *testing.T) {
	api := newBatchAPI(t)
	id := llmtest.Submit(t, newBatcher(api), batchItems(t))
	if id != "batch_01" {
		t.Errorf("id %q, want batch_02", id)
	}
	ups := api.srv.ByPath(http.MethodPost, "/v1/files")
	if len(ups) != 1 {
		t.Fatalf("%d uploads, want 1", len(ups))
	}
	u := llmtest.ParseMultipart(t, ups[0])
	if u.Fields["purpose"] != "batch" || u.Field != "file" || u.FileName != "batch.jsonl" || len(u.Fields) != 1 {
		t.Errorf("upload fields %v, part %q %q", u.Fields, u.Field, u.FileName)
	}
	if strings.Contains(string(u.Data), `"stream`) {
		t.Error("batch bodies carry stream or stream_options")
	}
	llmtest.Golden(t, "testdata/batch_input.golden.json", llmtest.JSONLines(t, u.Data))

	creates := api.srv.ByPath(http.MethodPost, "/v1/batches")
	if len(creates) != 1 {
		t.Fatalf("%d batch creations, want 1", len(creates))
	}
	c := creates[0]
	if want := `{"input_file_id":"file-in-1","endpoint":"/v1/chat/completions","completion_window":"24h"}`; string(c.Body) != want {
		t.Errorf("create body %s, want %s", c.Body, want)
	}
	for _, r := range []llmtest.Recorded{ups[0], c} {
		if r.Header.Get("Authorization") != "Bearer "+llmtest.APIKey {
			t.Errorf("%s %s without the key", r.Method, r.Path)
		}
	}
	if c.Header.Get("Content-Type") != "application/json" {
		t.Errorf("create content type %q", c.Header.Get("Content-Type"))
	}
}

// When the batch is refused, the uploaded input file is deleted rather
// than left for nothing to read, and the refusal is classified.
func TestBatchSubmitRefused(t *testing.T) {
	api := newBatchAPI(t)
	api.rejectBatch = true
	_, err := newBatcher(api).SubmitBatch(t.Context(), batchItems(t))
	if e := llmtest.ErrorOf(t, err); e.Kind != llm.KindBadRequest || e.Code != "token_limit_exceeded" || e.Provider != "openai" {
		t.Errorf("err %+v", e)
	}
	if len(api.srv.ByPath(http.MethodDelete, "/v1/files/file-in-1")) != 1 || api.hasFile("file-in-1") {
		t.Error("the input file of a refused batch was not deleted")
	}
}

// A batch polls running through validating, in_progress and finalizing
// until it completes; its output and error files then map every custom
// id to a Result (text; text and tool calls) or a classified error (a 400
// response, an expired and a cancelled request), priced at half the list
// price of the model that answered; the results can be read again until
// the batch is forgotten, which deletes its files.
func TestBatchLifecycle(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	id := llmtest.Submit(t, p, batchItems(t))
	for _, status := range []string{"validating", "in_progress", "finalizing"} {
		api.put(id, status, "", "")
		if st := llmtest.Poll(t, p, id); st != llm.BatchRunning {
			t.Fatalf("state %s while %s, want running", st, status)
		}
	}
	api.end(id)
	if st := llmtest.Poll(t, p, id); st != llm.BatchEnded {
		t.Fatalf("state %s after it completed, want ended", st)
	}
	got, err := p.BatchResults(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"file-out", "file-err"} {
		r := api.srv.ByPath(http.MethodGet, "/v1/files/"+f+"/content")
		if len(r) != 1 || r[0].Header.Get("Authorization") != "Bearer "+llmtest.APIKey {
			t.Errorf("%s read %d times, or without the key", f, len(r))
		}
	}
	llmtest.Golden(t, "testdata/batch_results.golden.json", llmtest.BatchOutcomes(t, got))

	if r := got["q-text"].Result; r == nil || r.Text() != "Sunny in Paris, 18 °C." || r.StopReason != llm.StopEnd {
		t.Errorf("q-text: %+v", got["q-text"])
	}
	tool := got["q-tool"].Result
	if tool == nil || tool.StopReason != llm.StopToolUse || tool.Text() != "Let me check." || len(tool.ToolCalls()) != 2 {
		t.Fatalf("q-tool: %+v", got["q-tool"])
	}
	if tc := tool.ToolCalls(); tc[0].ID != "call_abc" || tc[0].Name != "get_weather" || string(tc[0].Args) != `{"location": "Paris, FR", "unit": "celsius"}` || string(tc[1].Args) != `{}` {
		t.Errorf("tool calls %+v", tc)
	}
	for cid, want := range map[string]struct {
		kind  llm.ErrorKind
		retry bool
		code  string
	}{
		"q-bad":  {llm.KindBadRequest, false, "string_above_max_length"},
		"q-late": {llm.KindTimeout, true, "batch_expired"},
		"q-stop": {llm.KindCancelled, false, "batch_cancelled"},
	} {
		o := got[cid]
		if o.Result != nil {
			t.Errorf("%s has a result", cid)
			continue
		}
		if e := llmtest.ErrorOf(t, o.Err); e.Kind != want.kind || e.Retryable != want.retry || e.Code != want.code || e.Provider != "openai" {
			t.Errorf("%s: %+v, want %s retryable=%v code %s", cid, e, want.kind, want.retry, want.code)
		}
	}
	// Read again (a crash before the caller stored them), then forgotten.
	if again, err := p.BatchResults(t.Context(), id); err != nil || len(again) != len(got) {
		t.Fatalf("second read: %d results, %v", len(again), err)
	}
	if err := p.ForgetBatch(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"file-in-1", "file-out", "file-err"} {
		if api.hasFile(f) {
			t.Errorf("%s not deleted when the batch was forgotten", f)
		}
	}
}

// Batches bill at half the list price: 27 prompt tokens of which 12
// cached, and 2 completion tokens, of gpt-4o-mini (a dated snapshot
// answered) list at 435 micro-cents, so the batch costs 217.5, rounded
// up to 218.
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
	list := llm.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens}
	llm.DefaultPricing.Apply("gpt-4o-mini", &list)
	if list.CostMicrocents != 435 || u.InputTokens != 15 || u.CacheReadTokens != 12 || u.OutputTokens != 2 {
		t.Fatalf("fixture usage %+v lists at %d, want 435", u, list.CostMicrocents)
	}
	if !u.CostKnown || u.CostMicrocents != 218 {
		t.Errorf("batch cost %d (known %v), want 218", u.CostMicrocents, u.CostKnown)
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
	if len(got) != 5 || got["q-text"].Result == nil {
		t.Errorf("%d outcomes after a restart, want 5 with q-text answered", len(got))
	}
}

// Cancelling a running batch moves it to cancelling, which still polls as
// running; cancelling one that has ended is not an error; an unknown one
// is.
func TestBatchCancel(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	id := llmtest.Submit(t, p, batchItems(t))
	if err := p.CancelBatch(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if c := api.srv.ByPath(http.MethodPost, "/v1/batches/"+id+"/cancel"); len(c) != 1 || c[0].Header.Get("Authorization") != "Bearer "+llmtest.APIKey {
		t.Fatalf("cancel requests: %d", len(c))
	}
	if st := llmtest.Poll(t, p, id); st != llm.BatchRunning {
		t.Errorf("cancelling batch polls %s, want running", st)
	}
	api.put(id, "cancelled", "file-out", "file-err")
	if err := p.CancelBatch(t.Context(), id); err != nil {
		t.Errorf("cancelling a cancelled batch: %v", err)
	}
	if e := llmtest.ErrorOf(t, p.CancelBatch(t.Context(), "batch_gone")); e.Status != http.StatusNotFound {
		t.Errorf("cancelling an unknown batch: %+v", e)
	}
}

// A batch that stopped has ended when it left an output or error file
// (the error file names every request it did not answer) and failed when
// it left neither; BatchResults of a failed batch says why.
func TestBatchStates(t *testing.T) {
	tests := []struct {
		status, output, errs string
		want                 llm.BatchState
	}{
		{"validating", "", "", llm.BatchRunning},
		{"in_progress", "", "", llm.BatchRunning},
		{"finalizing", "", "", llm.BatchRunning},
		{"cancelling", "", "", llm.BatchRunning},
		{"completed", "file-out", "", llm.BatchEnded},
		{"completed", "", "file-err", llm.BatchEnded},
		{"expired", "file-out", "file-err", llm.BatchEnded},
		{"expired", "", "file-err", llm.BatchEnded},
		{"expired", "", "", llm.BatchFailed},
		{"cancelled", "file-out", "", llm.BatchEnded},
		{"cancelled", "", "", llm.BatchFailed},
		{"failed", "", "", llm.BatchFailed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s out=%q err=%q", tt.status, tt.output, tt.errs), func(t *testing.T) {
			api := newBatchAPI(t)
			p := newBatcher(api)
			id := llmtest.Submit(t, p, batchItems(t))
			api.put(id, tt.status, tt.output, tt.errs)
			if st := llmtest.Poll(t, p, id); st != tt.want {
				t.Fatalf("state %s, want %s", st, tt.want)
			}
			_, err := p.BatchResults(t.Context(), id)
			if (err == nil) != (tt.want == llm.BatchEnded) {
				t.Fatalf("BatchResults err %v in state %s", err, tt.want)
			}
			if tt.status == "failed" && !strings.Contains(llmtest.ErrorOf(t, err).Message, "not parseable as valid JSON") {
				t.Errorf("failed batch error %v does not say why", err)
			}
		})
	}
}

// Polling a batch the vendor does not know is a classified 404 whose
// message never carries the key the vendor echoed.
func TestBatchPollNotFound(t *testing.T) {
	api := newBatchAPI(t)
	_, err := newBatcher(api).PollBatch(t.Context(), "batch_gone")
	e := llmtest.ErrorOf(t, err)
	if e.Kind != llm.KindBadRequest || e.Retryable || e.Status != http.StatusNotFound || e.Provider != "openai" {
		t.Errorf("err %+v, want a non-retryable bad_request 404 from openai", e)
	}
	if strings.Contains(err.Error(), llmtest.APIKey) {
		t.Errorf("key leaked: %v", err)
	}
	if got := api.srv.Last(t).Path; got != "/v1/batches/batch_gone" {
		t.Errorf("polled %s", got)
	}
}
