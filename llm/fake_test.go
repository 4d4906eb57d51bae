package llm_test

import (
	"context"
	"io"
	"sync"

	"github.com/botd-dev/botd/llm"
)

// step scripts one call of a fakeProvider.
type step struct {
	openErr error       // returned before any chunk
	chunks  []llm.Chunk // then streamed
	midErr  error       // then returned instead of EOF, if set
}

// fakeProvider replays scripted steps and records the requests it got.
type fakeProvider struct {
	name string
	caps llm.Capabilities

	mu    sync.Mutex
	steps []step
	reqs  []*llm.Request
}

func newFake(name string, steps ...step) *fakeProvider {
	return &fakeProvider{name: name, steps: steps, caps: llm.Capabilities{Tools: true, Streaming: true, Vision: true, Reasoning: true}}
}

func (f *fakeProvider) Name() string                   { return f.name }
func (f *fakeProvider) Capabilities() llm.Capabilities { return f.caps }

func (f *fakeProvider) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func (f *fakeProvider) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	if len(f.steps) == 0 {
		return nil, llm.NewError(f.name, llm.KindUnknown, "fake: no scripted step left")
	}
	s := f.steps[0]
	f.steps = f.steps[1:]
	if s.openErr != nil {
		return nil, s.openErr
	}
	return &sliceStream{chunks: s.chunks, err: s.midErr}, nil
}

func (f *fakeProvider) Generate(ctx context.Context, req *llm.Request) (*llm.Result, error) {
	s, err := f.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return llm.Fold(ctx, s)
}

// sliceStream streams fixed chunks.
type sliceStream struct {
	chunks []llm.Chunk
	i      int
	err    error
	closed bool
}

func (s *sliceStream) Next() (llm.Chunk, error) {
	if s.i < len(s.chunks) {
		s.i++
		return s.chunks[s.i-1], nil
	}
	if s.err != nil {
		return llm.Chunk{}, s.err
	}
	return llm.Chunk{}, io.EOF
}

func (s *sliceStream) Close() error { s.closed = true; return nil }

func textReply(text string, u llm.Usage) []llm.Chunk {
	return []llm.Chunk{
		{Kind: llm.ChunkText, Text: text},
		{Kind: llm.ChunkStop, StopReason: llm.StopEnd, Usage: &u},
	}
}

func httpErr(provider string, status int, code string) *llm.Error {
	kind := llm.KindForStatus(status)
	return &llm.Error{Kind: kind, Retryable: kind.Retryable(), Status: status, Code: code, Provider: provider, Message: code}
}
