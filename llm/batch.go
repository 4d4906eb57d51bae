package llm

import "context"

// BatchItem is one request of a provider batch, named by the caller.
type BatchItem struct {
	// ID is the custom id the results are keyed by: 1–64 of [A-Za-z0-9_-].
	ID  string
	Req *Request // Req.Model names the model
}

// BatchState is where a provider batch is.
type BatchState string

const (
	BatchRunning BatchState = "running"
	// BatchEnded: results can be read (some items may have failed).
	BatchEnded BatchState = "ended"
	// BatchFailed: the batch as a whole failed, expired or was cancelled
	// before any result; there is nothing to read.
	BatchFailed BatchState = "failed"
)

// BatchOutcome is one item's answer: Result, or Err when the provider did
// not answer it (errored, expired, cancelled).
type BatchOutcome struct {
	Result *Result
	Err    error
}

// Batcher is the optional batch API of an adapter: requests answered
// within hours instead of seconds, at half the list price. Results carry
// usage with the batch cost applied.
type Batcher interface {
	Name() string
	SubmitBatch(ctx context.Context, items []BatchItem) (id string, err error)
	PollBatch(ctx context.Context, id string) (BatchState, error)
	BatchResults(ctx context.Context, id string) (map[string]BatchOutcome, error)
	// CancelBatch asks the provider to stop; a batch already ended is not
	// an error.
	CancelBatch(ctx context.Context, id string) error
}

// BatchForgetter is a Batcher whose provider keeps a batch's files until
// told: the caller forgets a batch once it has stored the results, so a
// crash between reading and storing them can read them again.
type BatchForgetter interface {
	ForgetBatch(ctx context.Context, id string) error
}
