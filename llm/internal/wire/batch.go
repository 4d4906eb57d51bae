package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/botd-dev/botd/llm"
)

// MaxBatchLine caps one line of a batch results file. A line holds one
// complete reply; long answers and tool arguments stay far below this,
// and a runaway line must not take the daemon's memory with it.
const MaxBatchLine = 16 << 20

// CheckBatch validates items before anything is built or sent: both
// vendors reject the whole batch for one bad or repeated custom id, and
// OpenAI only after the input file was uploaded.
func CheckBatch(provider string, items []llm.BatchItem) error {
	if len(items) == 0 {
		return llm.NewError(provider, llm.KindBadRequest, "batch has no items")
	}
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		switch {
		case !validBatchID(it.ID):
			return llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("batch item %d: id %q is not 1-64 of [A-Za-z0-9_-]", i, it.ID))
		case seen[it.ID]:
			return llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("batch item %d: id %q repeats", i, it.ID))
		case it.Req == nil:
			return llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("batch item %q has no request", it.ID))
		}
		seen[it.ID] = true
	}
	return nil
}

func validBatchID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Lines GETs url and calls fn with every non-blank line of the 2xx body
// as it streams in, so a results file of any size is never held whole.
// A line over max bytes fails the read. fn must not keep the slice.
func (c *Client) Lines(ctx context.Context, url string, h http.Header, max int, fn func(line []byte) error) error {
	resp, err := c.send(ctx, http.MethodGet, url, h, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	tooLong := func(err error) error {
		return c.finish(llm.Errorf(c.Provider, llm.KindUnknown, err, "GET %s: line over %d bytes", url, max))
	}
	sc := bufio.NewScanner(resp.Body)
	// The scanner's buffer also holds the line's "\r\n"; the cap is on
	// the line itself, checked below.
	sc.Buffer(make([]byte, 0, min(64<<10, max+2)), max+2)
	for sc.Scan() {
		if len(sc.Bytes()) > max {
			return tooLong(bufio.ErrTooLong)
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return tooLong(err)
	case err != nil:
		return c.finish(llm.FromTransport(c.Provider, err))
	}
	return nil
}

// BatchResult folds the chunks a decoder made from one complete reply,
// the same fold a streamed reply goes through, and prices it at the batch
// rate for model (the model the vendor says answered).
func (c *Client) BatchResult(model string, chunks []llm.Chunk) (*llm.Result, error) {
	f := llm.NewFolder()
	for _, ch := range chunks {
		if err := f.Add(ch); err != nil {
			return nil, c.finish(llm.AsError(c.Provider, err))
		}
	}
	res, err := f.Result()
	if err != nil {
		return nil, c.finish(llm.AsError(c.Provider, err))
	}
	c.Pricing.ApplyBatch(model, &res.Usage)
	return res, nil
}

// Readable is the one rule for reading a batch's results: nil once it
// ended; a classified error while it runs, or when it failed (failed says
// how, after the id: "ended without results (archived)").
func (c *Client) Readable(id string, st llm.BatchState, failed string) error {
	switch st {
	case llm.BatchRunning:
		return c.finish(llm.NewError(c.Provider, llm.KindBadRequest, fmt.Sprintf("batch %s has not ended", id)))
	case llm.BatchFailed:
		return c.finish(llm.NewError(c.Provider, llm.KindUnknown, fmt.Sprintf("batch %s %s", id, failed)))
	}
	return nil
}

// BatchGetter reads a vendor's batch object T: get fetches batch id,
// state maps its status.
type BatchGetter[T any] struct {
	Get   func(ctx context.Context, id string) (*T, error)
	State func(*T) (llm.BatchState, error)
}

// Poll is every vendor's PollBatch.
func (g BatchGetter[T]) Poll(ctx context.Context, id string) (llm.BatchState, error) {
	obj, err := g.Get(ctx, id)
	if err != nil {
		return "", fmt.Errorf("poll batch %s: %w", id, err)
	}
	return g.State(obj)
}

// Ended gets batch id to read its results, and says why they cannot be
// read unless it has ended (see [Client.Readable]); failed words how a
// failed batch failed.
func (g BatchGetter[T]) Ended(ctx context.Context, c *Client, id string, failed func(*T) string) (*T, error) {
	obj, err := g.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("batch %s results: %w", id, err)
	}
	st, err := g.State(obj)
	if err == nil {
		err = c.Readable(id, st, failed(obj))
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// MaxTranscriptBytes bounds a transcription answer when the request sets
// no bound: verbose_json of half an hour of speech with its segments is a
// few MB; more is not a transcript.
const MaxTranscriptBytes = 16 << 20

// Answer decodes the JSON of a 2xx answer into v. One that is not JSON
// of that shape (a proxy's page) fails as KindUnknown quoting its start;
// what names the answer expected ("an Images API answer").
func (c *Client) Answer(b []byte, v any, what string) error {
	if err := json.Unmarshal(b, v); err != nil {
		return c.finish(llm.Errorf(c.Provider, llm.KindUnknown, err, "the answer is not %s: %s", what, ErrorText(b)))
	}
	return nil
}

// Finish stamps the provider on e and scrubs the key from it, for errors
// an adapter reads from a 2xx body itself (a batch item's error).
func (c *Client) Finish(e *llm.Error) *llm.Error { return c.finish(e) }

// CancelBatch runs cancel and forgives its failure when batch id had
// ended anyway: a vendor may refuse to cancel a finished batch, but to
// the caller a batch that needs no stopping is stopped. An unknown batch
// (404) and transient failures stay errors.
func CancelBatch(ctx context.Context, b llm.Batcher, id string, cancel func() error) error {
	err := cancel()
	if err == nil {
		return nil
	}
	if !NotFound(err) && !llm.IsRetryable(err) {
		if st, perr := b.PollBatch(ctx, id); perr == nil && st != llm.BatchRunning {
			return nil
		}
	}
	return fmt.Errorf("cancel batch %s: %w", id, err)
}

// BatchObject makes one call that answers with a batch object and decodes
// it as T. An answer whose key (what names it: "id", "name") is empty is
// not a batch, whatever its status said.
func BatchObject[T any](ctx context.Context, c *Client, method, url string, h http.Header, body io.Reader, max int64, what string, key func(*T) string) (*T, error) {
	b, _, err := c.Do(ctx, method, url, h, body, max)
	if err != nil {
		return nil, err
	}
	var obj T
	if err := json.Unmarshal(b, &obj); err != nil || key(&obj) == "" {
		return nil, c.finish(llm.NewError(c.Provider, llm.KindUnknown, "batch response has no "+what+": "+Snippet(b)))
	}
	return &obj, nil
}

// BatchLines reads a results file of one JSON line L per item into out,
// keyed by the item's custom id. A line that is not JSON or names no item
// fails the whole read (the file is corrupt and the item unknown); a bad
// answer only fails its item, which outcome says.
func BatchLines[L any](ctx context.Context, c *Client, url string, h http.Header, out map[string]llm.BatchOutcome, key func(*L) string, outcome func(*L) llm.BatchOutcome) error {
	return c.Lines(ctx, url, h, MaxBatchLine, func(line []byte) error {
		var l L
		if err := json.Unmarshal(line, &l); err != nil || key(&l) == "" {
			return c.finish(llm.Errorf(c.Provider, llm.KindUnknown, err, "malformed results line: %s", Snippet(line)))
		}
		out[key(&l)] = outcome(&l)
		return nil
	})
}
