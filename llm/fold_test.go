package llm_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/botd-dev/botd/llm"
)

func TestFold(t *testing.T) {
	u := llm.Usage{InputTokens: 10, OutputTokens: 5, CostKnown: true, CostMicrocents: 42}
	stop := func(r llm.StopReason) llm.Chunk { return llm.Chunk{Kind: llm.ChunkStop, StopReason: r, Usage: &u} }
	tests := []struct {
		name     string
		chunks   []llm.Chunk
		want     string   // JSON of Result.Parts
		loaded   []string // Result.Loaded
		wantKind llm.ErrorKind
	}{
		{
			name:   "text deltas merge",
			chunks: []llm.Chunk{{Kind: llm.ChunkText, Text: "Hel"}, {Kind: llm.ChunkText, Text: "lo"}, stop(llm.StopEnd)},
			want:   `[{"kind":"text","text":"Hello"}]`,
		},
		{
			name: "reasoning then text then tool call split across deltas",
			chunks: []llm.Chunk{
				{Kind: llm.ChunkReasoningStart, ID: "r"},
				{Kind: llm.ChunkReasoningDelta, ID: "r", Text: "hmm "},
				{Kind: llm.ChunkReasoningDelta, ID: "r", Text: "ok"},
				{Kind: llm.ChunkReasoningEnd, ID: "r", Signature: "sig"},
				{Kind: llm.ChunkText, Text: "Sure."},
				{Kind: llm.ChunkToolCallStart, ID: "c1", Name: "f"},
				{Kind: llm.ChunkToolCallDelta, ID: "c1", Text: `{"a":`},
				{Kind: llm.ChunkToolCallDelta, ID: "c1", Text: ` [1, 2]}`},
				{Kind: llm.ChunkToolCallEnd, ID: "c1"},
				stop(llm.StopToolUse),
			},
			want: `[{"kind":"reasoning","text":"hmm ok","signature":"sig"},{"kind":"text","text":"Sure."},` +
				`{"kind":"tool_call","tool_call":{"id":"c1","name":"f","args":{"a":[1,2]}}}]`,
		},
		{
			name: "interleaved parallel tool calls",
			chunks: []llm.Chunk{
				{Kind: llm.ChunkToolCallStart, ID: "a", Name: "f"},
				{Kind: llm.ChunkToolCallStart, ID: "b", Name: "g"},
				{Kind: llm.ChunkToolCallDelta, ID: "b", Text: `{"y":2}`},
				{Kind: llm.ChunkToolCallDelta, ID: "a", Text: `{"x":1}`},
				stop(llm.StopToolUse), // ends still open calls
			},
			want: `[{"kind":"tool_call","tool_call":{"id":"a","name":"f","args":{"x":1}}},{"kind":"tool_call","tool_call":{"id":"b","name":"g","args":{"y":2}}}]`,
		},
		{
			name:   "empty arguments are an empty object",
			chunks: []llm.Chunk{{Kind: llm.ChunkToolCallStart, ID: "c", Name: "now"}, {Kind: llm.ChunkToolCallDelta, ID: "c", Text: "  "}, {Kind: llm.ChunkToolCallEnd, ID: "c"}, stop(llm.StopToolUse)},
			want:   `[{"kind":"tool_call","tool_call":{"id":"c","name":"now","args":{}}}]`,
		},
		{
			name:     "invalid arguments",
			chunks:   []llm.Chunk{{Kind: llm.ChunkToolCallStart, ID: "c", Name: "f"}, {Kind: llm.ChunkToolCallDelta, ID: "c", Text: `{"a":`}, {Kind: llm.ChunkToolCallEnd, ID: "c"}},
			wantKind: llm.KindUnknown,
		},
		{
			name:     "delta for unknown id",
			chunks:   []llm.Chunk{{Kind: llm.ChunkToolCallDelta, ID: "zz", Text: "{}"}},
			wantKind: llm.KindUnknown,
		},
		{
			name: "vendor blocks split the text and stay whole",
			chunks: []llm.Chunk{
				{Kind: llm.ChunkText, Text: "Searching."},
				{Kind: llm.ChunkVendor, Name: "anthropic", Raw: json.RawMessage(`{"type":"server_tool_use","id":"s1"}`)},
				{Kind: llm.ChunkVendor, Name: "anthropic", Raw: json.RawMessage(`{"type":"tool_search_tool_result","tool_use_id":"s1"}`), Loaded: []string{"get_weather", "get_forecast"}},
				{Kind: llm.ChunkText, Text: "Found."},
				{Kind: llm.ChunkVendor, Name: "anthropic", Raw: json.RawMessage(`{"type":"tool_search_tool_result","tool_use_id":"s2"}`), Loaded: []string{"get_forecast", "get_time"}},
				stop(llm.StopEnd),
			},
			want: `[{"kind":"text","text":"Searching."},{"kind":"vendor","vendor":"anthropic","raw":{"type":"server_tool_use","id":"s1"}},` +
				`{"kind":"vendor","vendor":"anthropic","raw":{"type":"tool_search_tool_result","tool_use_id":"s1"}},{"kind":"text","text":"Found."},` +
				`{"kind":"vendor","vendor":"anthropic","raw":{"type":"tool_search_tool_result","tool_use_id":"s2"}}]`,
			loaded: []string{"get_weather", "get_forecast", "get_time"},
		},
		{
			name:     "vendor chunk without its vendor",
			chunks:   []llm.Chunk{{Kind: llm.ChunkVendor, Raw: json.RawMessage(`{"type":"x"}`)}, stop(llm.StopEnd)},
			wantKind: llm.KindUnknown,
		},
		{
			name:     "vendor chunk without its block",
			chunks:   []llm.Chunk{{Kind: llm.ChunkVendor, Name: "anthropic"}, stop(llm.StopEnd)},
			wantKind: llm.KindUnknown,
		},
		{
			name:     "no stop chunk",
			chunks:   []llm.Chunk{{Kind: llm.ChunkText, Text: "cut"}},
			wantKind: llm.KindTransport,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := llm.Fold(t.Context(), &sliceStream{chunks: tt.chunks})
			if tt.wantKind != "" {
				if got := llm.KindOf(err); got != tt.wantKind {
					t.Fatalf("err = %v, want kind %s", err, tt.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(res.Parts)
			if string(got) != tt.want {
				t.Errorf("parts\n got %s\nwant %s", got, tt.want)
			}
			if res.Usage != u {
				t.Errorf("usage = %+v, want %+v", res.Usage, u)
			}
			if !slices.Equal(res.Loaded, tt.loaded) {
				t.Errorf("loaded = %q, want %q", res.Loaded, tt.loaded)
			}
		})
	}
}

func TestFoldCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := llm.Fold(ctx, &sliceStream{chunks: textReply("x", llm.Usage{})})
	if e, ok := err.(*llm.Error); !ok || e.Kind != llm.KindCancelled || e.Retryable {
		t.Fatalf("err = %v, want fatal cancelled", err)
	}
}

func TestFolderRejectsChunkAfterStop(t *testing.T) {
	f := llm.NewFolder()
	for _, c := range textReply("x", llm.Usage{}) {
		if err := f.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Add(llm.Chunk{Kind: llm.ChunkText, Text: "late"}); err == nil {
		t.Fatal("want error for a chunk after stop")
	}
}

// The benchmarks measure what folding adds per chunk on top of decoding:
// one reply of n chunks per op, with ns/chunk reported alongside.
func BenchmarkFoldText(b *testing.B) {
	const n = 1000
	chunks := make([]llm.Chunk, 0, n+1)
	for range n {
		chunks = append(chunks, llm.Chunk{Kind: llm.ChunkText, Text: "token "})
	}
	chunks = append(chunks, llm.Chunk{Kind: llm.ChunkStop, StopReason: llm.StopEnd, Usage: &llm.Usage{}})
	benchFold(b, chunks)
}

func BenchmarkFoldToolArgs(b *testing.B) {
	const n = 1000
	chunks := []llm.Chunk{{Kind: llm.ChunkToolCallStart, ID: "call_1", Name: "write_file"}, {Kind: llm.ChunkToolCallDelta, ID: "call_1", Text: `{"text":"`}}
	for range n - 3 {
		chunks = append(chunks, llm.Chunk{Kind: llm.ChunkToolCallDelta, ID: "call_1", Text: "abcdefgh"})
	}
	chunks = append(chunks, llm.Chunk{Kind: llm.ChunkToolCallDelta, ID: "call_1", Text: `"}`}, llm.Chunk{Kind: llm.ChunkToolCallEnd, ID: "call_1"},
		llm.Chunk{Kind: llm.ChunkStop, StopReason: llm.StopToolUse, Usage: &llm.Usage{}})
	benchFold(b, chunks)
}

func benchFold(b *testing.B, chunks []llm.Chunk) {
	ctx := context.Background()
	s := &sliceStream{chunks: chunks}
	b.ReportAllocs()
	for b.Loop() {
		s.i = 0
		if _, err := llm.Fold(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(chunks)), "ns/chunk")
}
