package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// batchesPath is the Message Batches collection.
const batchesPath = "/v1/messages/batches"

// maxBatchObject bounds a message_batch response, a few hundred bytes in
// practice.
const maxBatchObject = 1 << 20

var _ llm.Batcher = (*Provider)(nil)

type batchCreate struct {
	Requests []batchEntry `json:"requests"`
}

type batchEntry struct {
	CustomID string       `json:"custom_id"`
	Params   *wireRequest `json:"params"`
}

// batchObject is the message_batch every batch endpoint answers with.
type batchObject struct {
	ID               string `json:"id"`
	ProcessingStatus string `json:"processing_status"`
	ResultsURL       string `json:"results_url"`
	ArchivedAt       string `json:"archived_at"`
}

// SubmitBatch creates a Message Batch whose requests are the Messages
// bodies Generate would send, keyed by the items' ids.
func (p *Provider) SubmitBatch(ctx context.Context, items []llm.BatchItem) (string, error) {
	if err := wire.CheckBatch(p.Name(), items); err != nil {
		return "", err
	}
	h := p.header()
	h.Set("Content-Type", "application/json")
	create := batchCreate{Requests: make([]batchEntry, len(items))}
	for i, it := range items {
		files := p.Client.RemoteFiles(ctx, p, it.Req)
		params, err := p.build(it.Req, files)
		if err != nil {
			return "", wire.Annotate(err, "batch item %q", it.ID)
		}
		// A batch answers through its results file, never a stream.
		params.Stream = false
		create.Requests[i] = batchEntry{CustomID: it.ID, Params: params}
		if len(files) > 0 {
			// The requests run later under the headers the batch was
			// created with, so the batch carries the files beta.
			h.Set("anthropic-beta", FilesBeta)
		}
	}
	body, err := wire.JSONBody(create)
	if err != nil {
		return "", llm.Errorf(p.Name(), llm.KindBadRequest, err, "encode batch: %v", err)
	}
	obj, err := p.batchCall(ctx, http.MethodPost, "", h, body)
	if err != nil {
		return "", fmt.Errorf("submit batch: %w", err)
	}
	return obj.ID, nil
}

// PollBatch reads the batch's processing status.
func (p *Provider) PollBatch(ctx context.Context, id string) (llm.BatchState, error) {
	return p.batches().Poll(ctx, id)
}

func (p *Provider) batches() wire.BatchGetter[batchObject] {
	return wire.BatchGetter[batchObject]{Get: p.getBatch, State: p.state}
}

// state maps processing_status. canceling is still running: requests in
// flight may yet finish. An ended batch has results unless they were
// archived (results are kept 29 days), and only then is it failed: one
// whose requests all expired or were cancelled still has a results file
// saying so per item.
func (p *Provider) state(o *batchObject) (llm.BatchState, error) {
	switch o.ProcessingStatus {
	case "in_progress", "canceling":
		return llm.BatchRunning, nil
	case "ended":
		if o.ResultsURL == "" || o.ArchivedAt != "" {
			return llm.BatchFailed, nil
		}
		return llm.BatchEnded, nil
	}
	return "", p.Client.Finish(llm.NewError(p.Name(), llm.KindUnknown, fmt.Sprintf("batch %s: unknown processing_status %q", o.ID, o.ProcessingStatus)))
}

// BatchResults reads the results file of an ended batch. It is fetched
// from the configured base URL rather than results_url, which names
// api.anthropic.com even behind a proxy; that way the key only ever goes
// to the host botd was configured with.
func (p *Provider) BatchResults(ctx context.Context, id string) (map[string]llm.BatchOutcome, error) {
	_, err := p.batches().Ended(ctx, &p.Client, id, func(*batchObject) string { return "ended without results (archived)" })
	if err != nil {
		return nil, err
	}
	out := map[string]llm.BatchOutcome{}
	err = wire.BatchLines(ctx, &p.Client, p.batchURL(id, "/results"), p.header(), out, func(r *resultLine) string { return r.CustomID }, p.outcome)
	if err != nil {
		return nil, fmt.Errorf("batch %s results: %w", id, err)
	}
	return out, nil
}

// CancelBatch asks Anthropic to stop the batch; it moves to canceling
// and ends once requests in flight are done.
func (p *Provider) CancelBatch(ctx context.Context, id string) error {
	return wire.CancelBatch(ctx, p, id, func() error {
		_, err := p.batchCall(ctx, http.MethodPost, p.batchPath(id, "/cancel"), p.header(), nil)
		return err
	})
}

func (p *Provider) getBatch(ctx context.Context, id string) (*batchObject, error) {
	if id == "" {
		return nil, llm.NewError(p.Name(), llm.KindBadRequest, "empty batch id")
	}
	return p.batchCall(ctx, http.MethodGet, p.batchPath(id, ""), p.header(), nil)
}

// batchCall makes one call answering a message_batch; path is below the
// collection.
func (p *Provider) batchCall(ctx context.Context, method, path string, h http.Header, body io.Reader) (*batchObject, error) {
	return wire.BatchObject(ctx, &p.Client, method, wire.JoinURL(p.BaseURL, batchesPath+path), h, body, maxBatchObject, "id", func(o *batchObject) string { return o.ID })
}

func (p *Provider) batchPath(id, suffix string) string { return "/" + url.PathEscape(id) + suffix }

func (p *Provider) batchURL(id, suffix string) string {
	return wire.JoinURL(p.BaseURL, batchesPath+p.batchPath(id, suffix))
}

// resultLine is one line of a results file.
type resultLine struct {
	CustomID string `json:"custom_id"`
	Result   struct {
		Type    string          `json:"type"` // succeeded | errored | canceled | expired
		Message json.RawMessage `json:"message"`
		Error   *struct {
			Error *apiError `json:"error"`
		} `json:"error"`
	} `json:"result"`
}

// outcome is one results line's answer; a bad message only fails its
// item.
func (p *Provider) outcome(r *resultLine) llm.BatchOutcome {
	var e *llm.Error
	switch r.Result.Type {
	case "succeeded":
		res, err := p.decodeMessage(r.Result.Message)
		return llm.BatchOutcome{Result: res, Err: err}
	case "errored":
		if r.Result.Error == nil || r.Result.Error.Error == nil {
			e = llm.NewError("", llm.KindUnknown, "errored without detail")
		} else {
			e = r.Result.Error.Error.toError(0)
		}
	case "canceled":
		e = llm.NewError("", llm.KindCancelled, "the batch was cancelled before this request ran")
		e.Code = r.Result.Type
	case "expired":
		// Submitting again may well succeed, hence a retryable kind.
		e = llm.NewError("", llm.KindTimeout, "the batch expired before this request ran")
		e.Code = r.Result.Type
	default:
		e = llm.NewError("", llm.KindUnknown, fmt.Sprintf("unknown result type %q", r.Result.Type))
	}
	return llm.BatchOutcome{Err: p.Client.Finish(e)}
}

// message is a complete Messages API response.
type message struct {
	Model      string            `json:"model"`
	Content    []json.RawMessage `json:"content"`
	StopReason string            `json:"stop_reason"`
	Usage      usage             `json:"usage"`
}

// decodeMessage turns a complete message into a Result priced at the
// batch rate for the model that answered.
func (p *Provider) decodeMessage(raw json.RawMessage) (*llm.Result, error) {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, p.Client.Finish(llm.Errorf(p.Name(), llm.KindUnknown, err, "malformed message: %s", wire.Snippet(raw)))
	}
	chunks, err := m.chunks()
	if err != nil {
		return nil, p.Client.Finish(llm.AsError(p.Name(), err))
	}
	res, err := p.Client.BatchResult(m.Model, chunks)
	if err != nil {
		return nil, err
	}
	res.Raw = raw
	return res, nil
}

// chunks replays the message's blocks through the stream decoder, so a
// batched reply yields the chunks, and after the fold the Result, that
// the same reply streamed would.
func (m *message) chunks() ([]llm.Chunk, error) {
	d := &decoder{}
	d.setUsage(m.Usage)
	var out []llm.Chunk
	for i, raw := range m.Content {
		var cb contentBlock
		if err := json.Unmarshal(raw, &cb); err != nil {
			return nil, llm.Errorf("", llm.KindUnknown, err, "malformed content block %d: %s", i, wire.Snippet(raw))
		}
		out = d.startBlock(i, cb, raw, out)
		var err error
		if cb.Type == "tool_use" || cb.Type == "server_tool_use" {
			// A stream sends the arguments after an empty start block;
			// here they are in the block.
			if out, err = d.blockDelta(i, delta{Type: "input_json_delta", PartialJSON: string(cb.Input)}, out); err != nil {
				return nil, err
			}
		}
		if out, err = d.stopBlock(i, out); err != nil {
			return nil, err
		}
	}
	if m.StopReason != "" {
		d.stop = stopReason(m.StopReason)
	}
	return d.messageStop(out), nil
}
