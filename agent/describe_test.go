package agent

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
)

// A model that cannot see gets no image part: a description by the
// configured vision model, or a note saying why not, never a fatal error.
func TestTextOnlyModelGetsADescriptionOrANote(t *testing.T) {
	red := tinyPNG(t, color.RGBA{R: 255, A: 255})
	cases := []struct {
		name     string
		describe Describe
		want     string
	}{
		{"described", func(ctx context.Context, path, mime string) (string, error) {
			if b, err := os.ReadFile(path); err != nil || string(b) != string(red) || mime != "image/png" {
				return "", errors.New("the describer was not given the image")
			}
			return "A plain red square.", nil
		}, "another model described it:)\nA plain red square."},
		{"no describer", nil, "no model to describe them is configured (media.describe)"},
		{"describer fails", func(context.Context, string, string) (string, error) { return "", errors.New("vision model down") },
			"describing it failed: vision model down"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var toolText string
			f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
				if n == 1 {
					return toolCall("c1", "fetch_media", `{"mediaRef":"`+catRef+`"}`), nil
				}
				last := req.Messages[len(req.Messages)-1].Parts[0].ToolResult
				for _, p := range last.Content {
					if p.Media != nil {
						t.Errorf("a text-only model was sent a media part: %+v", p.Media)
					}
					toolText += p.Text
				}
				return textResult("answered"), nil
			})
			f.caps = llm.Capabilities{Tools: true}
			h := newHarness(t, f, func(o *Options) { o.Describe = tc.describe })
			h.media[catRef] = fakeMedia{Kind: "Image", Name: "cat.png", MIME: "image/png", Data: red}
			h.start()
			h.say(famChat, "Alice", "[Image: cat.png, 1KB, image/png, ref:"+catRef+"] @Andy what is this?")
			h.idle()
			if !strings.Contains(toolText, tc.want) {
				t.Errorf("tool result %q lacks %q", toolText, tc.want)
			}
			if got := sentTexts(h.tg.Sent()); len(got) != 1 || got[0] != "answered" {
				t.Errorf("sent %q", got)
			}
		})
	}
}

// A model that hears audio gets the voice note itself; one that does not
// gets the text (and the transcript, when there is one) only.
func TestNativeAudioOnlyForModelsThatHearIt(t *testing.T) {
	const voiceRef = "tg_VOICEnote0001"
	for _, hears := range []bool{true, false} {
		var media []*llm.Media
		f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
			if n == 1 {
				return toolCall("c1", "fetch_media", `{"mediaRef":"`+voiceRef+`"}`), nil
			}
			for _, p := range req.Messages[len(req.Messages)-1].Parts[0].ToolResult.Content {
				if p.Media != nil {
					media = append(media, p.Media)
				}
			}
			return textResult("ok"), nil
		})
		f.caps = llm.Capabilities{Tools: true, Vision: true, Audio: hears}
		h := newHarness(t, f, nil)
		h.media[voiceRef] = fakeMedia{Kind: "Voice", Name: "voice.ogg", MIME: "audio/ogg", Data: []byte("OggS voice")}
		h.start()
		h.say(famChat, "Alice", "[Voice: 4s, audio/ogg, ref:"+voiceRef+"] @Andy what does it say?")
		h.idle()
		switch {
		case hears && (len(media) != 1 || media[0].MIME != "audio/ogg" || !strings.HasSuffix(media[0].Path, "voice.ogg")):
			t.Errorf("a model that hears audio got %+v, want the voice note", media)
		case !hears && len(media) != 0:
			t.Errorf("a model that does not hear audio got %+v", media)
		}
		h.stop()
	}
}

// A description is a model call of its own: it is billed to the run that
// asked for it, like the run's own calls.
func TestDescribeIsBilledToTheRun(t *testing.T) {
	vision := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		r := textResult("A red square.")
		r.Usage = llm.Usage{InputTokens: 900, OutputTokens: 12, CostMicrocents: USD(0.003), CostKnown: true}
		return r, nil
	})
	var got []llm.Attempt
	ctx := llm.WithAttemptObserver(context.Background(), func(a llm.Attempt) { got = append(got, a) })
	path := filepath.Join(t.TempDir(), "x.png")
	os.WriteFile(path, tinyPNG(t, color.RGBA{R: 255, A: 255}), 0o600)
	text, err := NewDescribe(vision, "gpt-4.1-mini")(ctx, path, "image/png")
	if err != nil || text != "A red square." {
		t.Fatalf("describe = %q, %v", text, err)
	}
	if len(got) != 1 || got[0].Model != "gpt-4.1-mini" || got[0].Usage.CostMicrocents != USD(0.003) || got[0].Outcome != llm.OutcomeSucceeded {
		t.Errorf("attempts reported: %+v", got)
	}
}

// The same picture is described once per describing model, wherever its
// file lies; a failure is not remembered.
func TestDescriptionsAreCached(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	calls := 0
	fail := true
	base := func(ctx context.Context, path, mime string) (string, error) {
		calls++
		if fail {
			return "", errors.New("vision model down")
		}
		return fmt.Sprintf("description %d", calls), nil
	}
	dir := t.TempDir()
	red := tinyPNG(t, color.RGBA{R: 255, A: 255})
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "copy-of-a.png")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, red, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	d := CachedDescribe(base, st.DB, "vision/v1")
	if _, err := d(ctx, a, "image/png"); err == nil {
		t.Fatal("the failure was not passed on")
	}
	fail = false
	first, err := d(ctx, a, "image/png")
	if err != nil || first != "description 2" {
		t.Fatalf("after the failure: %q %v (a failure must not be cached)", first, err)
	}
	if again, _ := d(ctx, b, "image/png"); again != first || calls != 2 {
		t.Errorf("the same bytes elsewhere: %q after %d calls, want %q from the cache", again, calls, first)
	}
	if other, _ := CachedDescribe(base, st.DB, "vision/v2")(ctx, a, "image/png"); other != "description 3" {
		t.Errorf("another model: %q, want its own description", other)
	}
}
