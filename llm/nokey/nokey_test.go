package nokey

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/botd-dev/botd/llm"
)

func TestAnswersWithTheMessage(t *testing.T) {
	p := Provider{Message: "set ANTHROPIC_API_KEY"}
	ctx := context.Background()
	res, err := p.Generate(ctx, &llm.Request{})
	if err != nil || res.Text() != p.Message || len(res.ToolCalls()) != 0 || res.StopReason != llm.StopEnd || !res.Usage.CostKnown {
		t.Fatalf("Generate = %+v, %v", res, err)
	}
	s, err := p.Stream(ctx, &llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var text string
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		text += c.Text
	}
	if text != p.Message {
		t.Fatalf("stream said %q", text)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Generate(cancelled, &llm.Request{}); llm.KindOf(err) != llm.KindCancelled {
		t.Fatalf("cancelled Generate: %v", err)
	}
}
