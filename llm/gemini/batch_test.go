package gemini_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/gemini"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/providers"
)

// batchAPI is a loopback Gemini Batch API with just enough of the Files
// API to upload. A created batch is pending until the test moves it with
// put; a batch put with answers holds testdata/batch_answers.json inlined
// in the operation's response and the batch's output, as Gemini does.
// Nothing depends on time.
type batchAPI struct {
	srv     *llmtest.Server
	answers string
	mu      sync.Mutex
	n       int
	ops     map[string]string // name ("batches/b01") -> operation JSON
	states  map[string]string
}

const (
	batchesPath = "/v1beta/batches/"
	submitPath  = "/v1beta/models/" + model + ":batchGenerateContent"
)

func newBatchAPI(t *testing.T) *batchAPI {
	t.Helper()
	answers, err := os.ReadFile("testdata/batch_answers.json")
	if err != nil {
		t.Fatal(err)
	}
	f := &batchAPI{answers: string(answers), ops: map[string]string{}, states: map[string]string{}}
	f.srv = llmtest.NewServer(t, http.HandlerFunc(f.serve))
	return f
}

func (f *batchAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := r.URL.Path
	rest, isBatch := strings.CutPrefix(path, batchesPath)
	id, action, _ := strings.Cut(rest, ":")
	name := "batches/" + id
	op, known := f.ops[name]
	switch {
	case r.Method == http.MethodPost && path == "/upload/v1beta/files" && r.Header.Get("X-Goog-Upload-Command") == "start":
		w.Header().Set("X-Goog-Upload-URL", f.srv.URL+"/upload/v1beta/files?upload_id=u1")
	case r.Method == http.MethodPost && path == "/upload/v1beta/files":
		fmt.Fprintf(w, `{"file":{"name":"files/up1","uri":%q,"mimeType":"video/mp4","state":"ACTIVE"}}`, f.srv.URL+"/v1beta/files/up1")
	case r.Method == http.MethodPost && strings.HasPrefix(path, "/v1beta/models/") && strings.HasSuffix(path, ":batchGenerateContent"):
		f.n++
		name = fmt.Sprintf("batches/b%02d", f.n)
		f.putLocked(name, "BATCH_STATE_PENDING", false, "")
		fmt.Fprint(w, f.ops[name])
	case !isBatch:
		notFound(w, "no route")
	case !known:
		// Vendors echo what they were sent; the key must not get through.
		notFound(w, "Batch "+name+" not found for key "+llmtest.APIKey)
	case r.Method == http.MethodGet && action == "":
		fmt.Fprint(w, op)
	case r.Method == http.MethodPost && action == "cancel":
		if st := f.states[name]; st != "BATCH_STATE_PENDING" && st != "BATCH_STATE_RUNNING" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"code":400,"message":"Batch %s is already in a terminal state.","status":"FAILED_PRECONDITION"}}`, name)
			return
		}
		f.putLocked(name, "BATCH_STATE_CANCELLED", false, "")
		fmt.Fprint(w, `{}`)
	case r.Method == http.MethodDelete && action == "":
		delete(f.ops, name)
		fmt.Fprint(w, `{}`)
	default:
		notFound(w, "no route")
	}
}

func notFound(w http.ResponseWriter, msg string) {
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, `{"error":{"code":404,"message":%q,"status":"NOT_FOUND"}}`, msg)
}

// put sets batch name as the API reports it: its state, whether it holds
// the answers, and fields spliced into the operation (extra).
func (f *batchAPI) put(name, state string, answers bool, extra string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.putLocked(name, state, answers, extra)
}

func (f *batchAPI) putLocked(name, state string, answers bool, extra string) {
	f.states[name] = state
	output, response := "", ""
	if answers {
		inlined := `{"inlinedResponses":{"inlinedResponses":` + f.answers + `}}`
		output = `,"output":` + inlined
		response = `,"response":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",` + inlined[1:]
	}
	done := ""
	if state != "BATCH_STATE_PENDING" && state != "BATCH_STATE_RUNNING" {
		done = `,"done":true`
	}
	f.ops[name] = fmt.Sprintf(`{"name":%q,"metadata":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",`+
		`"model":"models/%s","displayName":"botd q-simple and 1 more","createTime":"2026-11-23T09:00:00Z","updateTime":"2026-11-23T09:00:00Z",`+
		`"batchStats":{"requestCount":"7"},"state":%q,"name":%q%s}%s%s%s}`, name, model, state, name, output, done, response, extra)
}

// end makes the batch succeed with the recorded answers.
func (f *batchAPI) end(name string) { f.put(name, "BATCH_STATE_SUCCEEDED", true, "") }

func newBatcher(api *batchAPI, opts ...gemini.Option) *gemini.Provider {
	return gemini.New(llmtest.APIKey, api.srv.URL, api.srv.Client(), opts...)
}

func batchItems(t *testing.T) []llm.BatchItem {
	t.Helper()
	canonical := llmtest.CanonicalRequest(t, "models/"+model, t.TempDir())
	canonical.ReasoningBudget = 2048
	return []llm.BatchItem{
		{ID: "q-simple", Req: llmtest.SimpleRequest(model)()},
		{ID: "q-canonical", Req: canonical},
	}
}

// keyInHeaderOnly checks every request carried the key in its header
// and none in its URL.
func keyInHeaderOnly(t *testing.T, api *batchAPI) {
	t.Helper()
	for _, r := range api.srv.Requests() {
		if strings.Contains(r.Path, llmtest.APIKey) {
			t.Errorf("%s %s: key in the URL", r.Method, r.Path)
		}
		if strings.HasPrefix(r.Path, "/v1beta/") && r.Header.Get("X-Goog-Api-Key") != llmtest.APIKey {
			t.Errorf("%s %s: x-goog-api-key %q", r.Method, r.Path, r.Header.Get("X-Goog-Api-Key"))
		}
	}
}

// The items become inlined requests, each the generateContent body the
// streaming path builds (with its model, "models/" said or not) keyed by
// the item's id, posted to the model's batchGenerateContent with the key
// in the header; the id is the operation's name.
func TestBatchSubmit(t *testing.T) {
	api := newBatchAPI(t)
	id := llmtest.Submit(t, newBatcher(api), batchItems(t))
	if id != "batches/b01" {
		t.Errorf("id %q, want batches/b01", id)
	}
	posts := api.srv.ByPath(http.MethodPost, submitPath)
	if len(posts) != 1 || len(api.srv.Requests()) != 1 {
		t.Fatalf("%d POST %s of %d requests, want 1 of 1", len(posts), submitPath, len(api.srv.Requests()))
	}
	if ct := posts[0].Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	keyInHeaderOnly(t, api)
	llmtest.Golden(t, "testdata/batch_request.golden.json", llmtest.Indent(t, posts[0].Body))
}

// A request referring to a file that went up through the Files API says
// so by fileUri in the batch too, as when streamed.
func TestBatchFiles(t *testing.T) {
	api := newBatchAPI(t)
	up, _ := llmtest.Uploads(t)
	video, data := llmtest.MediaFile(t, "clip.mp4", 8192)
	llmtest.Submit(t, newBatcher(api, providers.WithFiles(up)), []llm.BatchItem{{ID: "v", Req: videoRequest(video)}})
	body := string(api.srv.ByPath(http.MethodPost, submitPath)[0].Body)
	if !strings.Contains(body, `"fileUri":"`+api.srv.URL+`/v1beta/files/up1"`) || strings.Contains(body, `"inlineData"`) || len(body) > len(data) {
		t.Errorf("the batch does not refer to the uploaded video: %s", body)
	}
}

// Items no vendor would accept, items for two models (a Gemini batch runs
// one) and a batch over the 20 MB of inlined requests fail before any
// request is sent.
func TestBatchSubmitRejectsItems(t *testing.T) {
	req := llmtest.SimpleRequest(model)()
	big := llmtest.SimpleRequest(model)()
	big.System = strings.Repeat("x", 21<<20)
	tests := []struct {
		name  string
		items []llm.BatchItem
	}{
		{"none", nil},
		{"id with a dot", []llm.BatchItem{{ID: "a.b", Req: req}}},
		{"repeated id", []llm.BatchItem{{ID: "a", Req: req}, {ID: "a", Req: req}}},
		{"no request", []llm.BatchItem{{ID: "a"}}},
		{"no model", []llm.BatchItem{{ID: "a", Req: llmtest.SimpleRequest("")()}}},
		{"two models", []llm.BatchItem{{ID: "a", Req: req}, {ID: "b", Req: llmtest.SimpleRequest("gemini-2.5-pro")()}}},
		{"missing media", []llm.BatchItem{{ID: "a", Req: &llm.Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.ImageFile("image/png", "/nonexistent.png")}}}}}}},
		{"over 20 MB", []llm.BatchItem{{ID: "a", Req: big}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newBatchAPI(t)
			_, err := newBatcher(api).SubmitBatch(t.Context(), tt.items)
			if e := llmtest.ErrorOf(t, err); e.Kind != llm.KindBadRequest || e.Provider != "gemini" {
				t.Errorf("err %+v, want bad_request from gemini", e)
			}
			if n := len(api.srv.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// A batch polls running while pending and running, and ended once it
// succeeded; its results then map every key to a Result (text; thinking
// with its signature, text and function calls; a safety stop; a blocked
// prompt) or a classified error (an RPC status, a REST status, a request
// cancelled), the key scrubbed from every message.
func TestBatchLifecycle(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	id := llmtest.Submit(t, p, batchItems(t))
	if st := llmtest.Poll(t, p, id); st != llm.BatchRunning {
		t.Fatalf("pending batch polls %s, want running", st)
	}
	api.put(id, "BATCH_STATE_RUNNING", false, "")
	if st := llmtest.Poll(t, p, id); st != llm.BatchRunning {
		t.Fatalf("running batch polls %s, want running", st)
	}
	if _, err := p.BatchResults(t.Context(), id); llmtest.ErrorOf(t, err).Kind != llm.KindBadRequest {
		t.Errorf("results of a running batch: %v", err)
	}
	api.end(id)
	if st := llmtest.Poll(t, p, id); st != llm.BatchEnded {
		t.Fatalf("succeeded batch polls %s, want ended", st)
	}
	got, err := p.BatchResults(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if gets := api.srv.ByPath(http.MethodGet, batchesPath+"b01"); len(gets) != 5 {
		t.Errorf("%d GET %sb01, want 5 (3 polls, 2 reads of results)", len(gets), batchesPath)
	}
	keyInHeaderOnly(t, api)
	llmtest.Golden(t, "testdata/batch_results.golden.json", llmtest.BatchOutcomes(t, got))

	if len(got) != 7 {
		t.Errorf("%d outcomes, want 7", len(got))
	}
	if r := got["q-text"].Result; r == nil || r.Text() != "Sunny in Paris, 18 °C." || r.StopReason != llm.StopEnd {
		t.Errorf("q-text: %+v", got["q-text"])
	}
	tool := got["q-tool"].Result
	if tool == nil || tool.StopReason != llm.StopToolUse || len(tool.ToolCalls()) != 2 {
		t.Fatalf("q-tool: %+v", got["q-tool"])
	}
	if tc := tool.ToolCalls()[0]; tc.ID != "gemini_call_b-resp-2_0" || tc.Name != "get_weather" || tc.Signature != "CiQBVKhc7nAnSig1" || string(tc.Args) != `{"location": "Paris, FR", "unit": "celsius"}` {
		t.Errorf("tool call %+v (args %s)", tc, tc.Args)
	}
	if r := tool.Parts[0]; r.Kind != llm.PartReasoning || r.Signature != "CiQBVKhc-thought-sig" {
		t.Errorf("reasoning part %+v", r)
	}
	for _, cid := range []string{"q-safety", "q-blocked"} {
		if r := got[cid].Result; r == nil || r.StopReason != llm.StopContentFilter {
			t.Errorf("%s: %+v, want a content_filter stop", cid, got[cid])
		}
	}
	for cid, want := range map[string]struct {
		kind   llm.ErrorKind
		retry  bool
		status int
		code   string
	}{
		"q-bad":  {llm.KindBadRequest, false, 400, "INVALID_ARGUMENT"},
		"q-busy": {llm.KindRateLimit, true, 429, "RESOURCE_EXHAUSTED"},
		"q-stop": {llm.KindCancelled, false, 499, "CANCELLED"},
	} {
		o := got[cid]
		if o.Result != nil {
			t.Errorf("%s has a result", cid)
			continue
		}
		if e := llmtest.ErrorOf(t, o.Err); e.Kind != want.kind || e.Retryable != want.retry || e.Status != want.status || e.Code != want.code || e.Provider != "gemini" {
			t.Errorf("%s: %+v, want %s retryable=%v %d %s", cid, e, want.kind, want.retry, want.status, want.code)
		}
	}
}

// A batched answer is the Result the same response streamed would give:
// the response goes through the stream decoder and the fold, and only
// the cost differs, half the list price rounded up.
func TestBatchMatchesStream(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	id := llmtest.Submit(t, p, batchItems(t))
	api.end(id)
	got, err := p.BatchResults(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var answers []struct {
		Response json.RawMessage      `json:"response"`
		Metadata struct{ Key string } `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(api.answers), &answers); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range answers {
		if len(a.Response) == 0 {
			continue
		}
		n++
		t.Run(a.Metadata.Key, func(t *testing.T) {
			srv := llmtest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s\n\n", a.Response)
			}))
			streamed, err := newProvider(srv.URL).Generate(t.Context(), llmtest.SimpleRequest(model)())
			if err != nil {
				t.Fatal(err)
			}
			batched := got[a.Metadata.Key].Result
			if batched == nil {
				t.Fatalf("no batched result: %v", got[a.Metadata.Key].Err)
			}
			if !streamed.Usage.CostKnown || batched.Usage.CostMicrocents != (streamed.Usage.CostMicrocents+1)/2 {
				t.Errorf("batched cost %d, streamed %d: want half, rounded up", batched.Usage.CostMicrocents, streamed.Usage.CostMicrocents)
			}
			s, b := *streamed, *batched
			s.Raw, b.Raw = nil, nil
			s.Usage.CostMicrocents, b.Usage.CostMicrocents = 0, 0
			if sj, bj := llmtest.Marshal(t, s), llmtest.Marshal(t, b); string(sj) != string(bj) {
				t.Errorf("batched result differs from the streamed one\n--- batched\n%s\n--- streamed\n%s", bj, sj)
			}
		})
	}
	if n != 4 {
		t.Errorf("%d answered items compared, want 4", n)
	}
}

// Batches bill at half the list price: 210 input, 1,001 cache-read and 9
// output tokens of gemini-2.5-flash list at 16,058 micro-cents (16,057.5
// rounded), so the batch costs 8,029.
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
	llm.DefaultPricing.Apply(model, &list)
	if list.CostMicrocents != 16058 || u.InputTokens != 210 || u.CacheReadTokens != 1001 || u.OutputTokens != 9 {
		t.Fatalf("fixture usage %+v lists at %d, want 16058", u, list.CostMicrocents)
	}
	if !u.CostKnown || u.CostMicrocents != 8029 {
		t.Errorf("batch cost %d (known %v), want 8029", u.CostMicrocents, u.CostKnown)
	}
}

// Only the batch id survives a restart: a new Provider polls and reads
// the results of a batch an earlier one submitted, by its name or by the
// bare id, and again until the batch is forgotten.
func TestBatchRestartRecovery(t *testing.T) {
	api := newBatchAPI(t)
	id := llmtest.Submit(t, newBatcher(api), batchItems(t))
	api.end(id)

	again := newBatcher(api)
	for _, ref := range []string{id, strings.TrimPrefix(id, "batches/")} {
		if st := llmtest.Poll(t, again, ref); st != llm.BatchEnded {
			t.Fatalf("%s: state %s, want ended", ref, st)
		}
		got, err := again.BatchResults(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 7 || got["q-text"].Result == nil {
			t.Errorf("%s: %d outcomes after a restart, want 7 with q-text answered", ref, len(got))
		}
	}
	if gets := api.srv.ByPath(http.MethodGet, batchesPath+"b01"); len(gets) != 4 {
		t.Errorf("%d GET %sb01, want 4", len(gets), batchesPath)
	}
}

// Forgetting a batch deletes it (its answers with it); forgetting one
// already gone is fine.
func TestBatchForget(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	id := llmtest.Submit(t, p, batchItems(t))
	api.end(id)
	if _, err := p.BatchResults(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if err := p.ForgetBatch(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if d := api.srv.ByPath(http.MethodDelete, batchesPath+"b01"); len(d) != 1 {
		t.Fatalf("%d DELETE %sb01, want 1", len(d), batchesPath)
	}
	keyInHeaderOnly(t, api)
	if _, err := p.PollBatch(t.Context(), id); llmtest.ErrorOf(t, err).Status != http.StatusNotFound {
		t.Errorf("a forgotten batch polls %v, want a 404", err)
	}
	if err := p.ForgetBatch(t.Context(), id); err != nil {
		t.Errorf("forgetting a batch already gone: %v", err)
	}
	if e := llmtest.ErrorOf(t, p.ForgetBatch(t.Context(), "batches/")); e.Kind != llm.KindBadRequest {
		t.Errorf("forgetting an empty id: %+v", e)
	}
}

// Cancelling a running batch posts :cancel; it then ends cancelled with
// no answers, which is failed. Cancelling one that has ended is not an
// error; an unknown one is.
func TestBatchCancel(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	id := llmtest.Submit(t, p, batchItems(t))
	if err := p.CancelBatch(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if c := api.srv.ByPath(http.MethodPost, batchesPath+"b01:cancel"); len(c) != 1 {
		t.Fatalf("%d cancel requests, want 1", len(c))
	}
	keyInHeaderOnly(t, api)
	if st := llmtest.Poll(t, p, id); st != llm.BatchFailed {
		t.Errorf("cancelled batch polls %s, want failed", st)
	}
	if err := p.CancelBatch(t.Context(), id); err != nil {
		t.Errorf("cancelling a cancelled batch: %v", err)
	}
	api.end(id)
	if err := p.CancelBatch(t.Context(), id); err != nil {
		t.Errorf("cancelling a succeeded batch: %v", err)
	}
	if e := llmtest.ErrorOf(t, p.CancelBatch(t.Context(), "batches/gone")); e.Status != http.StatusNotFound {
		t.Errorf("cancelling an unknown batch: %+v", e)
	}
}

// The state decides: pending and running are running; a batch that
// stopped for any reason has ended when it holds answers (from the
// operation's response or, without one, the batch's output) and has
// failed when it holds none, BatchResults then saying why.
func TestBatchStates(t *testing.T) {
	const name = "batches/bx"
	tests := []struct {
		name, state string
		answers     bool
		extra       string
		want        llm.BatchState
		why         string
	}{
		{"pending", "BATCH_STATE_PENDING", false, "", llm.BatchRunning, ""},
		{"running", "BATCH_STATE_RUNNING", false, "", llm.BatchRunning, ""},
		{"succeeded", "BATCH_STATE_SUCCEEDED", true, "", llm.BatchEnded, ""},
		{"succeeded, answers in the output only", "BATCH_STATE_SUCCEEDED", true, `,"response":null`, llm.BatchEnded, ""},
		{"succeeded without answers", "BATCH_STATE_SUCCEEDED", false, "", llm.BatchFailed, "succeeded without results"},
		{"failed", "BATCH_STATE_FAILED", false, `,"error":{"code":3,"message":"Batch input is invalid."}`, llm.BatchFailed, "failed without results: Batch input is invalid."},
		{"cancelled", "BATCH_STATE_CANCELLED", false, "", llm.BatchFailed, "cancelled without results"},
		{"expired", "BATCH_STATE_EXPIRED", false, "", llm.BatchFailed, "expired without results"},
		{"expired with some answers", "BATCH_STATE_EXPIRED", true, "", llm.BatchEnded, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newBatchAPI(t)
			p := newBatcher(api)
			// A later key wins in encoding/json, so extra overrides.
			api.put(name, tt.state, tt.answers, tt.extra)
			if st := llmtest.Poll(t, p, name); st != tt.want {
				t.Fatalf("state %s, want %s", st, tt.want)
			}
			got, err := p.BatchResults(t.Context(), name)
			if (err == nil) != (tt.want == llm.BatchEnded) {
				t.Fatalf("BatchResults err %v in state %s", err, tt.want)
			}
			if err != nil {
				if e := llmtest.ErrorOf(t, err); tt.why != "" && !strings.Contains(e.Message, tt.why) {
					t.Errorf("err %q, want it to say %q", e.Message, tt.why)
				}
			} else if len(got) != 7 {
				t.Errorf("%d outcomes, want 7", len(got))
			}
		})
	}
}

// An unknown state is an error rather than a guess, and so is an answer
// that does not say which item it answers.
func TestBatchMalformed(t *testing.T) {
	api := newBatchAPI(t)
	p := newBatcher(api)
	api.put("batches/bx", "BATCH_STATE_PAUSED", false, "")
	_, err := p.PollBatch(t.Context(), "batches/bx")
	if e := llmtest.ErrorOf(t, err); e.Kind != llm.KindUnknown || !strings.Contains(e.Message, "BATCH_STATE_PAUSED") {
		t.Errorf("unknown state: %+v", e)
	}

	api.answers = `[{"response":{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}}]`
	api.end("batches/bx")
	_, err = p.BatchResults(t.Context(), "batches/bx")
	if e := llmtest.ErrorOf(t, err); e.Kind != llm.KindUnknown || !strings.Contains(e.Message, "no key") {
		t.Errorf("answer without a key: %+v", e)
	}
}

// Polling a batch Gemini does not know is a classified 404 whose message
// never carries the key the vendor echoed.
func TestBatchPollNotFound(t *testing.T) {
	api := newBatchAPI(t)
	_, err := newBatcher(api).PollBatch(t.Context(), "batches/gone")
	e := llmtest.ErrorOf(t, err)
	if e.Kind != llm.KindBadRequest || e.Retryable || e.Status != http.StatusNotFound || e.Code != "NOT_FOUND" || e.Provider != "gemini" {
		t.Errorf("err %+v, want a non-retryable bad_request 404 from gemini", e)
	}
	if strings.Contains(err.Error(), llmtest.APIKey) {
		t.Errorf("key leaked: %v", err)
	}
	if got := api.srv.Last(t).Path; got != batchesPath+"gone" {
		t.Errorf("polled %s", got)
	}
	keyInHeaderOnly(t, api)
	// The id is one path segment, whatever it holds.
	newBatcher(api).PollBatch(t.Context(), "batches/a/b?c")
	if got := api.srv.Last(t).Path; got != batchesPath+"a%2Fb%3Fc" {
		t.Errorf("polled %s, want the id escaped", got)
	}
}

// A batch that does not name its model is priced by the model version
// each response names.
func TestBatchPricedByModelVersion(t *testing.T) {
	api := newBatchAPI(t)
	api.put("batches/bx", "BATCH_STATE_SUCCEEDED", true, `,"metadata":{"state":"BATCH_STATE_SUCCEEDED"}`)
	got, err := newBatcher(api).BatchResults(t.Context(), "batches/bx")
	if err != nil {
		t.Fatal(err)
	}
	if u := got["q-text"].Result.Usage; !u.CostKnown || u.CostMicrocents != 8029 {
		t.Errorf("cost %d (known %v), want 8029", u.CostMicrocents, u.CostKnown)
	}
}
