package openai

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
	"github.com/botd-dev/botd/llm/internal/wire"
)

const (
	// batchEndpoint is what each input line asks for; it is the path on
	// OpenAI's host, whatever the configured base URL.
	batchEndpoint = "/v1/chat/completions"
	// maxBatchInput is OpenAI's limit for a batch input file.
	maxBatchInput = 200 << 20
	// maxBatchObject bounds a batch object response.
	maxBatchObject = 1 << 20
)

var _ llm.Batcher = (*Provider)(nil)

// batchInputLine is one line of the uploaded input file.
type batchInputLine struct {
	CustomID string       `json:"custom_id"`
	Method   string       `json:"method"`
	URL      string       `json:"url"`
	Body     *wireRequest `json:"body"`
}

type batchCreate struct {
	InputFileID      string `json:"input_file_id"`
	Endpoint         string `json:"endpoint"`
	CompletionWindow string `json:"completion_window"`
}

// batchObject is the batch every batch endpoint answers with.
type batchObject struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	InputFileID  string `json:"input_file_id"`
	OutputFileID string `json:"output_file_id"`
	ErrorFileID  string `json:"error_file_id"`
	Errors       *struct {
		Data []apiError `json:"data"`
	} `json:"errors"`
}

// SubmitBatch uploads the chat completions bodies Generate would send as
// a JSONL input file (purpose batch; OpenAI expires those after 30 days
// on its own) and creates a batch over it with the 24h window, the only
// one offered.
func (p *Provider) SubmitBatch(ctx context.Context, items []llm.BatchItem) (string, error) {
	if err := wire.CheckBatch(p.Name(), items); err != nil {
		return "", err
	}
	input, err := p.batchInput(ctx, items)
	if err != nil {
		return "", err
	}
	f, err := p.upload(ctx, [][2]string{{"purpose", "batch"}}, llm.FileUpload{
		Name: "batch.jsonl", MIME: "application/jsonl", Size: int64(len(input)), Body: bytes.NewReader(input),
	})
	if err != nil {
		return "", fmt.Errorf("submit batch: %w", err)
	}
	body, err := wire.JSONBody(batchCreate{InputFileID: f.ID, Endpoint: batchEndpoint, CompletionWindow: "24h"})
	if err != nil {
		return "", llm.Errorf(p.Name(), llm.KindBadRequest, err, "encode batch: %v", err)
	}
	h := p.header()
	h.Set("Content-Type", "application/json")
	obj, err := p.batchCall(ctx, http.MethodPost, "/batches", h, body)
	if err != nil {
		// No batch will ever read the input file; don't leave it behind.
		p.deleteFiles(ctx, f.ID)
		return "", fmt.Errorf("submit batch: %w", err)
	}
	return obj.ID, nil
}

// batchInput renders the input file: one request per line.
func (p *Provider) batchInput(ctx context.Context, items []llm.BatchItem) ([]byte, error) {
	var buf bytes.Buffer
	for _, it := range items {
		body, err := buildRequest(p.Name(), it.Req, p.official, p.Client.RemoteFiles(ctx, p, it.Req))
		if err != nil {
			return nil, wire.Annotate(err, "batch item %q", it.ID)
		}
		// The batch answers through an output file, never a stream.
		body.Stream, body.StreamOptions = false, nil
		line, err := wire.Marshal(batchInputLine{CustomID: it.ID, Method: http.MethodPost, URL: batchEndpoint, Body: body})
		if err != nil {
			return nil, llm.Errorf(p.Name(), llm.KindBadRequest, err, "encode batch item %q: %v", it.ID, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		if buf.Len() > maxBatchInput {
			return nil, llm.NewError(p.Name(), llm.KindBadRequest, fmt.Sprintf("batch input over %d MB", maxBatchInput>>20))
		}
	}
	return buf.Bytes(), nil
}

// PollBatch reads the batch's status.
func (p *Provider) PollBatch(ctx context.Context, id string) (llm.BatchState, error) {
	return p.batches().Poll(ctx, id)
}

func (p *Provider) batches() wire.BatchGetter[batchObject] {
	return wire.BatchGetter[batchObject]{Get: p.getBatch, State: p.state}
}

// state maps status. A batch that stopped for any reason (completed,
// expired, cancelled, failed) has ended when it left an output or error
// file: the items it did not answer are in the error file, so one whose
// items all expired still has results, as at Anthropic. One that left
// neither (failed validation, cancelled or expired before any request
// ran) has failed.
func (p *Provider) state(o *batchObject) (llm.BatchState, error) {
	switch o.Status {
	case "validating", "in_progress", "finalizing", "cancelling":
		return llm.BatchRunning, nil
	case "completed", "expired", "cancelled", "failed":
		if o.OutputFileID != "" || o.ErrorFileID != "" {
			return llm.BatchEnded, nil
		}
		return llm.BatchFailed, nil
	}
	return "", p.Client.Finish(llm.NewError(p.Name(), llm.KindUnknown, fmt.Sprintf("batch %s: unknown status %q", o.ID, o.Status)))
}

// BatchResults reads the output file, then the error file, of an ended
// batch. Once both were read whole, the batch's files are deleted (best
// effort: OpenAI drops batch files after 30 days anyway), so results can
// be read only once.
func (p *Provider) BatchResults(ctx context.Context, id string) (map[string]llm.BatchOutcome, error) {
	obj, err := p.batches().Ended(ctx, &p.Client, id, func(o *batchObject) string { return o.Status + " without results" + o.reason() })
	if err != nil {
		return nil, err
	}
	out := map[string]llm.BatchOutcome{}
	for _, fid := range []string{obj.OutputFileID, obj.ErrorFileID} {
		if fid == "" {
			continue
		}
		err := wire.BatchLines(ctx, &p.Client, wire.JoinURL(p.BaseURL, "/files/"+url.PathEscape(fid)+"/content"), p.header(), out, func(r *resultLine) string { return r.CustomID }, p.outcome)
		if err != nil {
			return nil, fmt.Errorf("batch %s results: %w", id, err)
		}
	}
	return out, nil
}

var _ llm.BatchForgetter = (*Provider)(nil)

// ForgetBatch deletes the batch's input, output and error files (best
// effort: a file already gone is fine). Results are read before, and
// may be read again until then.
func (p *Provider) ForgetBatch(ctx context.Context, id string) error {
	obj, err := p.getBatch(ctx, id)
	if err != nil {
		return fmt.Errorf("forget batch %s: %w", id, err)
	}
	p.deleteFiles(ctx, obj.InputFileID, obj.OutputFileID, obj.ErrorFileID)
	return nil
}

// reason renders the batch-level errors of a failed batch.
func (o *batchObject) reason() string {
	if o.Errors == nil || len(o.Errors.Data) == 0 {
		return ""
	}
	msgs := make([]string, 0, len(o.Errors.Data))
	for _, e := range o.Errors.Data {
		msgs = append(msgs, e.Message)
	}
	return ": " + strings.Join(msgs, "; ")
}

// CancelBatch asks OpenAI to stop the batch; it is cancelling for up to
// ten minutes, then cancelled with whatever results it has.
func (p *Provider) CancelBatch(ctx context.Context, id string) error {
	return wire.CancelBatch(ctx, p, id, func() error {
		if id == "" {
			return llm.NewError(p.Name(), llm.KindBadRequest, "empty batch id")
		}
		_, err := p.batchCall(ctx, http.MethodPost, "/batches/"+url.PathEscape(id)+"/cancel", p.header(), nil)
		return err
	})
}

func (p *Provider) getBatch(ctx context.Context, id string) (*batchObject, error) {
	if id == "" {
		return nil, llm.NewError(p.Name(), llm.KindBadRequest, "empty batch id")
	}
	return p.batchCall(ctx, http.MethodGet, "/batches/"+url.PathEscape(id), p.header(), nil)
}

// batchCall makes one call answering a batch object.
func (p *Provider) batchCall(ctx context.Context, method, path string, h http.Header, body io.Reader) (*batchObject, error) {
	return wire.BatchObject(ctx, &p.Client, method, wire.JoinURL(p.BaseURL, path), h, body, maxBatchObject, "id", func(o *batchObject) string { return o.ID })
}

// deleteFiles removes the batch's files, best effort: nothing depends on
// it, and a failure only leaves a file to OpenAI's own expiry.
func (p *Provider) deleteFiles(ctx context.Context, ids ...string) {
	for _, id := range ids {
		if id != "" {
			_ = p.DeleteFile(ctx, llm.RemoteFile{ID: id})
		}
	}
}

// resultLine is one line of an output or error file.
type resultLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	// Error is set when the request was never made (batch_expired,
	// batch_cancelled); a failed request has a non-2xx response instead.
	Error json.RawMessage `json:"error"`
}

// outcome is one results line's answer; a bad response only fails its
// item.
func (p *Provider) outcome(r *resultLine) llm.BatchOutcome {
	var e *llm.Error
	switch {
	case len(r.Error) > 0 && string(r.Error) != "null":
		a, ok := decodeError(r.Error)
		if !ok {
			a = &apiError{Message: wire.Snippet(r.Error)}
		}
		e = a.toError(0)
	case r.Response == nil:
		e = llm.NewError("", llm.KindUnknown, "results line without a response")
	case r.Response.StatusCode < 200 || r.Response.StatusCode > 299:
		e = parseError(r.Response.StatusCode, nil, r.Response.Body)
	default:
		res, err := p.decodeCompletion(r.Response.Body)
		return llm.BatchOutcome{Result: res, Err: err}
	}
	return llm.BatchOutcome{Err: p.Client.Finish(e)}
}

// completion is a chat.completion object.
type completion struct {
	Model   string `json:"model"`
	Choices []struct {
		Message      delta   `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// decodeCompletion turns a complete reply into a Result priced at the
// batch rate for the model that answered. The message has the fields of
// a stream delta, so the reply is folded as a one-chunk stream through
// the stream decoder: one mapping of content, tool calls, reasoning,
// finish reasons and usage for both paths.
func (p *Provider) decodeCompletion(raw json.RawMessage) (*llm.Result, error) {
	var cc completion
	if err := json.Unmarshal(raw, &cc); err != nil {
		return nil, p.Client.Finish(llm.Errorf(p.Name(), llm.KindUnknown, err, "malformed chat.completion: %s", wire.Snippet(raw)))
	}
	c := chunk{Usage: cc.Usage, Error: cc.Error}
	for _, ch := range cc.Choices {
		c.Choices = append(c.Choices, choice{Delta: ch.Message, FinishReason: ch.FinishReason})
	}
	d := &decoder{}
	out, err := d.add(c, nil)
	if err == nil {
		out, err = d.stop(out)
	}
	if err != nil {
		return nil, p.Client.Finish(llm.AsError(p.Name(), err))
	}
	res, err := p.Client.BatchResult(cc.Model, out)
	if err != nil {
		return nil, err
	}
	res.Raw = raw
	return res, nil
}
