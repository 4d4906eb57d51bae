// Package nokey is the model botd runs with when no LLM provider has a key
// yet: it answers every request with what to set, so a fresh install can
// be opened, written to, and tells its owner in the chat what it needs.
package nokey

import (
	"context"
	"io"
	"strings"

	"github.com/botd-dev/botd/llm"
)

// Lead opens every Message: it marks the answer as botd's notice, not the
// assistant's words, so the conversation later prompts carry leaves it out
// (IsNotice) and a model that gets a key does not take "I can't answer" as
// what it said.
const Lead = "I can't answer yet: botd has no LLM API key."

// IsNotice reports whether text, one of the assistant's own stored
// messages, is the answer of this provider.
func IsNotice(text string) bool { return strings.HasPrefix(text, Lead) }

// Provider answers every request with Message. It calls no network.
type Provider struct {
	// Message is the whole answer, e.g. which environment variable to
	// set; it starts with Lead.
	Message string
}

// Name is what attempts and runs log as the provider.
func (p Provider) Name() string { return "none" }

// Capabilities: none, so the agent offers no tools and sends no media.
func (p Provider) Capabilities() llm.Capabilities { return llm.Capabilities{Streaming: true} }

// Generate returns Message as the reply.
func (p Provider) Generate(ctx context.Context, _ *llm.Request) (*llm.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, llm.AsError(p.Name(), err)
	}
	return &llm.Result{Parts: []llm.Part{llm.Text(p.Message)}, StopReason: llm.StopEnd, Usage: llm.Usage{CostKnown: true}}, nil
}

// Stream returns Message as one text chunk and a stop.
func (p Provider) Stream(ctx context.Context, _ *llm.Request) (llm.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, llm.AsError(p.Name(), err)
	}
	return &stream{chunks: []llm.Chunk{{Kind: llm.ChunkText, Text: p.Message}, {Kind: llm.ChunkStop, StopReason: llm.StopEnd, Usage: &llm.Usage{CostKnown: true}}}}, nil
}

type stream struct{ chunks []llm.Chunk }

func (s *stream) Next() (llm.Chunk, error) {
	if len(s.chunks) == 0 {
		return llm.Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *stream) Close() error { return nil }
