package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/sse"
	"github.com/botd-dev/botd/llm/internal/wire"
)

const (
	// batchPrefix starts the resource name of a batch, which is the id
	// SubmitBatch returns.
	batchPrefix = "batches/"
	// maxBatchInput is the Batch API's limit for a batch of inlined
	// requests; larger batches would need an input file.
	maxBatchInput = 20 << 20
	// maxBatchObject bounds a batch operation. Inlined answers come back
	// inside it, twice (the operation's response and the batch's output),
	// so it is sized for a full batch rather than a status line.
	maxBatchObject = 64 << 20
	// maxEmpty bounds the empty object cancel and delete answer with.
	maxEmpty = 64 << 10
)

var (
	_ llm.Batcher        = (*Provider)(nil)
	_ llm.BatchForgetter = (*Provider)(nil)
)

// batchCreate is the body of models/{model}:batchGenerateContent.
type batchCreate struct {
	Batch struct {
		DisplayName string `json:"displayName"`
		InputConfig struct {
			Requests struct {
				Requests []batchRequest `json:"requests"`
			} `json:"requests"`
		} `json:"inputConfig"`
	} `json:"batch"`
}

// batchRequest is one inlined request: the generateContent body the
// streaming path builds, named by the caller's key.
type batchRequest struct {
	Request  modelRequest `json:"request"`
	Metadata batchKey     `json:"metadata"`
}

// modelRequest is a GenerateContentRequest with its model, which the
// official SDKs name in every inlined request.
type modelRequest struct {
	Model string `json:"model"`
	*wireRequest
}

type batchKey struct {
	Key string `json:"key"`
}

// operation is the long-running operation every batch call but cancel and
// delete answers with; its metadata is the batch.
type operation struct {
	Name     string          `json:"name"`
	Done     bool            `json:"done"`
	Metadata *batchMeta      `json:"metadata"`
	Response json.RawMessage `json:"response"`
	Error    *apiError       `json:"error"`
}

type batchMeta struct {
	Model  string          `json:"model"`
	State  string          `json:"state"`
	Output json.RawMessage `json:"output"`
}

// batchOutput is GenerateContentBatchOutput.
type batchOutput struct {
	InlinedResponses *struct {
		InlinedResponses []inlinedResponse `json:"inlinedResponses"`
	} `json:"inlinedResponses"`
}

type inlinedResponse struct {
	Response json.RawMessage `json:"response"`
	Error    *apiError       `json:"error"`
	Metadata *batchKey       `json:"metadata"`
}

// SubmitBatch creates a batch of inlined requests, the generateContent
// bodies Generate would send, keyed by the items' ids. A Gemini batch
// runs one model, so the items must all name the same one.
func (p *Provider) SubmitBatch(ctx context.Context, items []llm.BatchItem) (string, error) {
	if err := wire.CheckBatch(p.Name(), items); err != nil {
		return "", err
	}
	model := strings.TrimPrefix(items[0].Req.Model, "models/")
	if model == "" {
		return "", llm.NewError(p.Name(), llm.KindBadRequest, fmt.Sprintf("batch item %q names no model", items[0].ID))
	}
	var create batchCreate
	create.Batch.DisplayName = "botd " + items[0].ID
	if len(items) > 1 {
		create.Batch.DisplayName += fmt.Sprintf(" and %d more", len(items)-1)
	}
	reqs := make([]batchRequest, len(items))
	for i, it := range items {
		if m := strings.TrimPrefix(it.Req.Model, "models/"); m != model {
			return "", llm.NewError(p.Name(), llm.KindBadRequest, fmt.Sprintf("batch item %q: model %q, but the batch runs %q (one model per batch)", it.ID, m, model))
		}
		body, err := buildRequest(p.Name(), withFileURIs(it.Req, p.Client.RemoteFiles(ctx, p, it.Req)))
		if err != nil {
			return "", wire.Annotate(err, "batch item %q", it.ID)
		}
		reqs[i] = batchRequest{Request: modelRequest{Model: "models/" + model, wireRequest: body}, Metadata: batchKey{Key: it.ID}}
	}
	create.Batch.InputConfig.Requests.Requests = reqs
	body, err := wire.Marshal(create)
	if err != nil {
		return "", llm.Errorf(p.Name(), llm.KindBadRequest, err, "encode batch: %v", err)
	}
	if len(body) > maxBatchInput {
		return "", llm.NewError(p.Name(), llm.KindBadRequest, fmt.Sprintf("batch of %d bytes is over the %d MB of inlined requests a batch takes", len(body), maxBatchInput>>20))
	}
	h := p.header()
	h.Set("Content-Type", "application/json")
	op, err := p.batchCall(ctx, http.MethodPost, "/v1beta/models/"+url.PathEscape(model)+":batchGenerateContent", h, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("submit batch: %w", err)
	}
	return op.Name, nil
}

// PollBatch reads the batch's state.
func (p *Provider) PollBatch(ctx context.Context, id string) (llm.BatchState, error) {
	state := func(op *operation) (llm.BatchState, error) {
		st, _, err := p.state(op)
		return st, err
	}
	return wire.BatchGetter[operation]{Get: p.getBatch, State: state}.Poll(ctx, id)
}

// state maps the batch state. A batch that stopped for any reason
// (succeeded, failed, cancelled, expired) has ended when it holds
// answers, and failed when it holds none. The answers are returned too.
func (p *Provider) state(op *operation) (llm.BatchState, []inlinedResponse, error) {
	st := ""
	if op.Metadata != nil {
		st = op.Metadata.State
	}
	switch st {
	case "BATCH_STATE_PENDING", "BATCH_STATE_RUNNING":
		return llm.BatchRunning, nil, nil
	case "BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED":
	default:
		return "", nil, p.Client.Finish(llm.NewError(p.Name(), llm.KindUnknown, fmt.Sprintf("batch %s: unknown state %q", op.Name, st)))
	}
	answers, err := p.answers(op)
	if err != nil {
		return "", nil, err
	}
	if len(answers) == 0 {
		return llm.BatchFailed, nil, nil
	}
	return llm.BatchEnded, answers, nil
}

// answers reads the inlined responses from the operation's response, or
// else from the batch's output: both hold the same list.
func (p *Provider) answers(op *operation) ([]inlinedResponse, error) {
	raw := op.Response
	if isNull(raw) && op.Metadata != nil {
		raw = op.Metadata.Output
	}
	if isNull(raw) {
		return nil, nil
	}
	var out batchOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, p.Client.Finish(llm.Errorf(p.Name(), llm.KindUnknown, err, "batch %s: malformed output: %s", op.Name, wire.Snippet(raw)))
	}
	if out.InlinedResponses == nil {
		return nil, nil
	}
	return out.InlinedResponses.InlinedResponses, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// BatchResults reads the answers of an ended batch, which come inlined in
// the batch itself. They stay readable until ForgetBatch deletes the
// batch.
func (p *Provider) BatchResults(ctx context.Context, id string) (map[string]llm.BatchOutcome, error) {
	op, err := p.getBatch(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("batch %s results: %w", id, err)
	}
	st, answers, err := p.state(op)
	if err == nil {
		why := ""
		if op.Error != nil && op.Error.Message != "" {
			why = ": " + op.Error.Message
		}
		err = p.Client.Readable(id, st, strings.ToLower(strings.TrimPrefix(op.Metadata.State, "BATCH_STATE_"))+" without results"+why)
	}
	if err != nil {
		return nil, err
	}
	model := op.Metadata.Model
	out := make(map[string]llm.BatchOutcome, len(answers))
	for i, a := range answers {
		if a.Metadata == nil || a.Metadata.Key == "" {
			// Which item this answers is unknown, so none can be trusted.
			return nil, p.Client.Finish(llm.NewError(p.Name(), llm.KindUnknown, fmt.Sprintf("batch %s: answer %d has no key", id, i)))
		}
		out[a.Metadata.Key] = p.outcome(model, a)
	}
	return out, nil
}

// outcome decodes one answer. A bad response only fails its item.
func (p *Provider) outcome(model string, a inlinedResponse) llm.BatchOutcome {
	switch {
	case a.Error != nil:
		return llm.BatchOutcome{Err: p.Client.Finish(itemError(a.Error))}
	case isNull(a.Response):
		return llm.BatchOutcome{Err: p.Client.Finish(llm.NewError("", llm.KindUnknown, "answer without a response or an error"))}
	}
	res, err := p.decodeResponse(model, a.Response)
	return llm.BatchOutcome{Result: res, Err: err}
}

// rpcCodes names the canonical google.rpc.Code values with the HTTP
// status each maps to.
var rpcCodes = map[int]struct {
	name   string
	status int
}{
	1: {"CANCELLED", 499}, 2: {"UNKNOWN", 500}, 3: {"INVALID_ARGUMENT", 400},
	4: {"DEADLINE_EXCEEDED", 504}, 5: {"NOT_FOUND", 404}, 6: {"ALREADY_EXISTS", 409},
	7: {"PERMISSION_DENIED", 403}, 8: {"RESOURCE_EXHAUSTED", 429}, 9: {"FAILED_PRECONDITION", 400},
	10: {"ABORTED", 409}, 11: {"OUT_OF_RANGE", 400}, 12: {"UNIMPLEMENTED", 501},
	13: {"INTERNAL", 500}, 14: {"UNAVAILABLE", 503}, 15: {"DATA_LOSS", 500},
	16: {"UNAUTHENTICATED", 401},
}

// itemError classifies an answer's error. It is a google.rpc.Status,
// whose code is the canonical RPC code (3, not 400) and which has no
// status name; the REST error shape (HTTP code and status name) is
// accepted too. Both go through the same mapping as a failed call.
func itemError(a *apiError) *llm.Error {
	st := *a
	if rc, ok := rpcCodes[st.Code]; ok {
		st.Code = rc.status
		if st.Status == "" {
			st.Status = rc.name
		}
	}
	e := st.toError(0)
	if st.Status == "CANCELLED" {
		// The batch was cancelled before this request ran.
		e.Kind, e.Retryable = llm.KindCancelled, false
	}
	return e
}

// decodeResponse turns a complete GenerateContentResponse into a Result
// priced at the batch rate for the batch's model (the model a streamed
// call is priced by), or the model version the response names when the
// batch names none. The response has the shape of a stream chunk, so it
// is folded as a one-event stream through the stream decoder: one mapping
// of parts, signatures, finish reasons and usage for both paths.
func (p *Provider) decodeResponse(model string, raw json.RawMessage) (*llm.Result, error) {
	d := &decoder{}
	out, err := d.Event(sse.Event{Data: raw}, nil)
	if err == nil {
		out, err = d.End(out)
	}
	if err != nil {
		return nil, p.Client.Finish(llm.AsError(p.Name(), err))
	}
	if model == "" {
		var v struct {
			ModelVersion string `json:"modelVersion"`
		}
		_ = json.Unmarshal(raw, &v)
		model = v.ModelVersion
	}
	res, err := p.Client.BatchResult(model, out)
	if err != nil {
		return nil, err
	}
	res.Raw = raw
	return res, nil
}

// CancelBatch asks Gemini to stop the batch; it ends cancelled with
// whatever answers it has.
func (p *Provider) CancelBatch(ctx context.Context, id string) error {
	return wire.CancelBatch(ctx, p, id, func() error {
		path, err := p.batchPath(id)
		if err == nil {
			_, _, err = p.Client.Do(ctx, http.MethodPost, wire.JoinURL(p.BaseURL, path+":cancel"), p.header(), nil, maxEmpty)
		}
		return err
	})
}

// ForgetBatch deletes the batch, and with it the answers it holds; one
// already gone is fine. Results are read before, and may be read again
// until then.
func (p *Provider) ForgetBatch(ctx context.Context, id string) error {
	path, err := p.batchPath(id)
	if err == nil {
		_, _, err = p.Client.Do(ctx, http.MethodDelete, wire.JoinURL(p.BaseURL, path), p.header(), nil, maxEmpty)
	}
	if err != nil && !wire.NotFound(err) {
		return fmt.Errorf("forget batch %s: %w", id, err)
	}
	return nil
}

func (p *Provider) getBatch(ctx context.Context, id string) (*operation, error) {
	path, err := p.batchPath(id)
	if err != nil {
		return nil, err
	}
	return p.batchCall(ctx, http.MethodGet, path, p.header(), nil)
}

// batchPath is the URL path of batch id, given as its resource name
// ("batches/123") or without the prefix.
func (p *Provider) batchPath(id string) (string, error) {
	rest := strings.TrimPrefix(id, batchPrefix)
	if rest == "" {
		return "", llm.NewError(p.Name(), llm.KindBadRequest, "empty batch id")
	}
	return "/v1beta/" + batchPrefix + url.PathEscape(rest), nil
}

// batchCall makes one call answering a batch operation.
func (p *Provider) batchCall(ctx context.Context, method, path string, h http.Header, body io.Reader) (*operation, error) {
	return wire.BatchObject(ctx, &p.Client, method, wire.JoinURL(p.BaseURL, path), h, body, maxBatchObject, "name", func(op *operation) string { return op.Name })
}
