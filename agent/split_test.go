package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
)

// pngOf is a w×h PNG.
func pngOf(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestEstimateSplit(t *testing.T) {
	dir := t.TempDir()
	wide := filepath.Join(dir, "wide.png") // scaled to 1568×500: 1046 tokens
	if err := os.WriteFile(wide, pngOf(t, 3136, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	voice := filepath.Join(dir, "voice.ogg") // 10 s at 16 kbit/s
	if err := os.WriteFile(voice, make([]byte, 20_000), 0o600); err != nil {
		t.Fatal(err)
	}
	small := base64.StdEncoding.EncodeToString(pngOf(t, 300, 250)) // 100 tokens
	tool := llm.Tool{Name: "fetch_media", Description: strings.Repeat("d", 95), Parameters: json.RawMessage(`{"type":"object"}`)}
	for _, tc := range []struct {
		name string
		req  llm.Request
		want store.TokenSplit
	}{
		{"system only", llm.Request{System: strings.Repeat("s", 400)}, store.TokenSplit{Prompt: 100}},
		{"tools", llm.Request{System: "abcd", Tools: []llm.Tool{tool, tool},
			// Deferred tools are held back by the provider: not counted.
			Deferred: []llm.Tool{tool}}, store.TokenSplit{Prompt: 1, Tools: 2 * 31}},
		{"conversation", llm.Request{Messages: []llm.Message{
			llm.UserText(strings.Repeat("q", 40)),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartReasoning, Text: "think"},
				llm.ToolCallPart("c1", "fetch_media", json.RawMessage(`{"mediaRef":"x"}`))}},
			llm.ToolResults(llm.ToolResultPart("c1", false, llm.Text(strings.Repeat("r", 80)))),
		}}, store.TokenSplit{Conversation: 10 + 2 + 4 + 20}},
		{"an image part in a tool result", llm.Request{Messages: []llm.Message{
			llm.UserText("what is it?"),
			llm.ToolResults(llm.ToolResultPart("c1", false, llm.Text("here"), llm.ImageFile("image/png", wide))),
		}}, store.TokenSplit{Conversation: 3 + 1, Media: 1046}},
		{"media of each kind", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
			llm.MediaBase64("image/png", small),
			llm.ImageFile("image/jpeg", filepath.Join(dir, "gone.jpg")), // unreadable: the flat figure
			llm.MediaURL("image/png", "https://example.com/x.png"),
			llm.MediaBase64("image/png", "!!not base64, not an image"),                        // the flat figure
			llm.MediaBase64("image/gif", base64.StdEncoding.EncodeToString([]byte("GIF89a"))), // a header cut short: flat
			llm.MediaFile("audio/ogg", voice),
			llm.MediaFile("application/pdf", filepath.Join(dir, "doc.pdf")),
		}}}}, store.TokenSplit{Media: 100 + 4*imageFlatTokens + 20_000/audioBytesPerToken + mediaFlatTokens}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := estimateSplit(&tc.req); got != tc.want {
				t.Errorf("estimate = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestApportion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		est   store.TokenSplit
		total int64
		want  store.TokenSplit
	}{
		{"system only", store.TokenSplit{Prompt: 100}, 130, store.TokenSplit{Prompt: 130}},
		{"exact shares", store.TokenSplit{Prompt: 1, Tools: 2, Conversation: 1}, 400, store.TokenSplit{Prompt: 100, Tools: 200, Conversation: 100}},
		// 100/3 each: the leftover token goes to the first largest remainder.
		{"rounding", store.TokenSplit{Prompt: 1, Tools: 1, Conversation: 1}, 100, store.TokenSplit{Prompt: 34, Tools: 33, Conversation: 33}},
		{"larger remainder wins", store.TokenSplit{Prompt: 1, Tools: 2}, 10, store.TokenSplit{Prompt: 3, Tools: 7}},
		{"a part estimated at nothing gets nothing", store.TokenSplit{Prompt: 3, Media: 7}, 11, store.TokenSplit{Prompt: 3, Media: 8}},
		{"nothing estimated", store.TokenSplit{}, 42, store.TokenSplit{Conversation: 42}},
		{"nothing reported", store.TokenSplit{Prompt: 5}, 0, store.TokenSplit{}},
		{"a hostile figure does not overflow", store.TokenSplit{Prompt: math.MaxInt64 / 2, Tools: math.MaxInt64 / 2}, math.MaxInt64 - 1,
			store.TokenSplit{Prompt: math.MaxInt64 / 2, Tools: math.MaxInt64 / 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := apportion(tc.est, tc.total)
			if got != tc.want {
				t.Errorf("apportion = %+v, want %+v", got, tc.want)
			}
			if tc.total > 0 && got.Total() != tc.total {
				t.Errorf("parts sum to %d, want %d", got.Total(), tc.total)
			}
		})
	}
}

// A multi-turn run through the agent (the model fetches a photo, then
// answers) records a split of the tokens the provider reported, cache
// reads and writes included: its parts sum to the run's input tokens,
// each is what the requests as sent give it, and the photo shows as
// media.
func TestRunRecordsItsTokenSplit(t *testing.T) {
	usages := []llm.Usage{
		{InputTokens: 2900, CacheWriteTokens: 1000, OutputTokens: 20},
		{InputTokens: 1400, CacheReadTokens: 3900, OutputTokens: 12},
	}
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		var res *llm.Result
		switch n {
		case 1:
			res = toolCall("c1", "fetch_media", `{"mediaRef":"`+catRef+`"}`)
		case 2:
			res = textResult("A grey cat.")
		default:
			return nil, errScript
		}
		res.Usage = usages[n-1]
		return res, nil
	})
	h := newHarness(t, f, nil)
	h.media[catRef] = fakeMedia{Kind: "Image", Name: "cat.png", MIME: "image/png", Data: pngOf(t, 1200, 900)}
	h.start()
	h.say(famChat, "Alice", "[Image: cat.png, 1KB, image/png, ref:"+catRef+"] my cat")
	h.say(famChat, "Carol", "@Andy what is in the photo?")
	h.idle()

	runs, err := h.st.Runs(context.Background(), "family", 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	r := runs[0]
	if r.Split == nil {
		t.Fatal("the run has no split")
	}
	if r.InputTokens != 9200 || r.Split.Total() != r.InputTokens {
		t.Errorf("split %+v sums to %d; the run's input tokens are %d, want 9200", *r.Split, r.Split.Total(), r.InputTokens)
	}
	var want store.TokenSplit
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, req := range reqs {
		u := usages[i]
		want.Add(apportion(estimateSplit(&req), u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens))
	}
	if *r.Split != want {
		t.Errorf("split %+v, want %+v (the requests' estimates)", *r.Split, want)
	}
	if r.Split.Prompt == 0 || r.Split.Tools == 0 || r.Split.Conversation == 0 || r.Split.Media == 0 {
		t.Errorf("a part is missing: %+v", *r.Split)
	}
	// Only the second request held the photo (1200×900: 1440 tokens).
	if m := estimateSplit(&reqs[1]).Media; m != 1440 {
		t.Errorf("the photo is estimated at %d tokens, want 1440", m)
	}
}

// BenchmarkEstimateSplit is what splitting costs a model turn: a request
// the size of today's plain question (a 4.7 KB prompt, 13 tools of 10 KB
// in all) with a conversation of 40 messages and two photos in files.
func BenchmarkEstimateSplit(b *testing.B) {
	dir := b.TempDir()
	var parts []llm.Part
	for i, size := range [][2]int{{1568, 1176}, {1200, 900}} {
		p := filepath.Join(dir, "photo"+string(rune('a'+i))+".png")
		if err := os.WriteFile(p, pngOf(b, size[0], size[1]), 0o600); err != nil {
			b.Fatal(err)
		}
		parts = append(parts, llm.ImageFile("image/png", p))
	}
	req := llm.Request{System: strings.Repeat("p", 4700)}
	for i := range 13 {
		req.Tools = append(req.Tools, llm.Tool{Name: "tool" + string(rune('a'+i)), Description: strings.Repeat("d", 300),
			Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string","description":"` + strings.Repeat("x", 450) + `"}}}`)})
	}
	for i := range 40 {
		req.Messages = append(req.Messages, llm.UserText(strings.Repeat("m", 200+i)))
	}
	req.Messages = append(req.Messages, llm.ToolResults(llm.ToolResultPart("c1", false, parts...)))
	b.ReportAllocs()
	var e store.TokenSplit
	for b.Loop() {
		e = estimateSplit(&req)
	}
	if e.Media != imageTokens(1568, 1176)+imageTokens(1200, 900) {
		b.Fatalf("media estimated at %d", e.Media)
	}
}
