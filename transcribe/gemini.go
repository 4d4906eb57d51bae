package transcribe

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/botd-dev/botd/llm"
)

// noSpeech is what the prompt asks Gemini to answer for audio without
// speech; a model cannot answer with nothing.
const noSpeech = "[no speech]"

// geminiPrompt follows the audio, as Google advises for a single medium.
const geminiPrompt = "Transcribe this audio verbatim, in the language spoken. Answer with the transcript only: " +
	"no introduction, no description of sounds, no timestamps, no translation. " +
	"If nothing is said, answer exactly " + noSpeech

// truncatedNote ends a transcript the model stopped writing at its output
// limit, so that the reader knows that it is not all that was said.
const truncatedNote = " [transcript cut off: the model reached its output limit]"

// gemini asks generateContent for a transcript of the audio, sent inline.
// The JSON body is streamed: the audio is base64-encoded on its way out of
// f, never held in memory.
func (t *Transcriber) gemini(ctx context.Context, a audio) (Transcript, error) {
	head, _ := json.Marshal(baseType(a.mime))
	prompt, _ := json.Marshal(geminiPrompt)
	prefix := `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":` + string(head) + `,"data":"`
	suffix := `"}},{"text":` + string(prompt) + `}]}]}`

	header := http.Header{}
	header.Set("Content-Type", "application/json")
	if t.o.APIKey != "" {
		// In a header, as the adapter sends it: a key in the query string
		// ends up in URLs that errors and proxies print.
		header.Set("x-goog-api-key", t.o.APIKey)
	}
	model := strings.TrimPrefix(t.o.Model, "models/")
	body, _, err := t.post(ctx, a, upload{
		url:    joinURL(t.o.BaseURL, "/v1beta/models/"+url.PathEscape(model)+":generateContent"),
		header: header,
		length: int64(len(prefix)) + int64(base64.StdEncoding.EncodedLen(int(a.size))) + int64(len(suffix)),
		body: func() io.Reader {
			return io.MultiReader(strings.NewReader(prefix), newBase64Reader(io.NewSectionReader(a.f, 0, a.size)), strings.NewReader(suffix))
		},
	})
	if err != nil {
		return Transcript{}, err
	}
	return t.geminiAnswer(body)
}

// geminiAnswer takes the text of the first candidate, leaving out thoughts.
func (t *Transcriber) geminiAnswer(body []byte) (Transcript, error) {
	var r struct {
		Candidates []struct {
			Content *struct {
				Parts []struct {
					Text    string `json:"text"`
					Thought bool   `json:"thought"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Transcript{}, t.fail(llm.Errorf("", llm.KindUnknown, err, "unreadable answer: %s", snippet(body)))
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		return Transcript{}, t.fail(llm.NewError("", llm.KindContentFilter, "the audio was blocked: "+r.PromptFeedback.BlockReason))
	}
	if len(r.Candidates) == 0 {
		return Transcript{}, t.fail(llm.NewError("", llm.KindUnknown, "the answer has no candidates: "+snippet(body)))
	}
	c := r.Candidates[0]
	var b strings.Builder
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			if !p.Thought {
				b.WriteString(p.Text)
			}
		}
	}
	text := strings.TrimSpace(b.String())
	switch c.FinishReason {
	case "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY":
		return Transcript{}, t.fail(llm.NewError("", llm.KindContentFilter, "the transcript was withheld: "+c.FinishReason))
	case "STOP", "":
	case "MAX_TOKENS":
		t.o.Log.Warn("transcript cut off at the model's output limit", "provider", t.o.Name, "model", t.o.Model, "chars", len(text))
		text += truncatedNote
	default:
		if text == "" {
			// OTHER, LANGUAGE, MALFORMED_…: no transcript, and no saying why.
			return Transcript{}, t.fail(llm.NewError("", llm.KindUnknown, "the model stopped without a transcript: "+c.FinishReason))
		}
	}
	if strings.Trim(text, " .") == noSpeech {
		text = ""
	}
	return Transcript{Text: text}, nil
}

// base64Reader reads src as standard base64, a block at a time.
type base64Reader struct {
	src io.Reader
	in  [3 * 1024]byte
	out [4 * 1024]byte
	buf []byte
	err error
}

func newBase64Reader(src io.Reader) *base64Reader { return &base64Reader{src: src} }

func (r *base64Reader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		// Whole blocks of 3 bytes encode without padding, so only the
		// last, short read may end in '='.
		n, err := io.ReadFull(r.src, r.in[:])
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		base64.StdEncoding.Encode(r.out[:], r.in[:n])
		r.buf, r.err = r.out[:base64.StdEncoding.EncodedLen(n)], err
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
