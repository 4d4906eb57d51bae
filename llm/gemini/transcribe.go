package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"net/url"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

var _ llm.Transcriber = (*Provider)(nil)

// noSpeech is what the prompt asks Gemini to answer for audio without
// speech; a model cannot answer with nothing.
const noSpeech = "[no speech]"

// transcribePrompt follows the audio, as Google advises for a single medium.
const transcribePrompt = "Transcribe this audio verbatim, in the language spoken. Answer with the transcript only: " +
	"no introduction, no description of sounds, no timestamps, no translation. " +
	"If nothing is said, answer exactly " + noSpeech

// Transcribe asks generateContent for a transcript of the audio, sent
// inline. The JSON body is streamed: the audio is base64-encoded on its way
// out of the file, never held in memory.
func (p *Provider) Transcribe(ctx context.Context, r llm.TranscribeRequest) (llm.Transcription, error) {
	a := r.Audio
	head, _ := json.Marshal(baseType(a.MIME))
	prompt, _ := json.Marshal(transcribePrompt)
	prefix := `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":` + string(head) + `,"data":"`
	suffix := `"}},{"text":` + string(prompt) + `}]}]}`

	header := p.header()
	header.Set("Content-Type", "application/json")
	max := r.MaxBytes
	if max <= 0 {
		max = wire.MaxTranscriptBytes
	}
	model := strings.TrimPrefix(r.Model, "models/")
	body, _, err := p.Client.Upload(ctx, wire.JoinURL(p.BaseURL, "/v1beta/models/"+url.PathEscape(model)+":generateContent"), header,
		int64(len(prefix))+int64(base64.StdEncoding.EncodedLen(int(a.Size)))+int64(len(suffix)),
		func() io.Reader {
			return io.MultiReader(strings.NewReader(prefix), newBase64Reader(io.NewSectionReader(a.R, 0, a.Size)), strings.NewReader(suffix))
		}, max)
	if err != nil {
		return llm.Transcription{}, err
	}
	tr, e := transcriptAnswer(body)
	if e != nil {
		return llm.Transcription{}, p.Client.Finish(e)
	}
	return tr, nil
}

// transcriptAnswer takes the text of the first candidate, leaving out
// thoughts.
func transcriptAnswer(body []byte) (llm.Transcription, *llm.Error) {
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
		return llm.Transcription{}, llm.Errorf("", llm.KindUnknown, err, "unreadable answer: %s", wire.Snippet(body))
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		return llm.Transcription{}, llm.NewError("", llm.KindContentFilter, "the audio was blocked: "+r.PromptFeedback.BlockReason)
	}
	if len(r.Candidates) == 0 {
		return llm.Transcription{}, llm.NewError("", llm.KindUnknown, "the answer has no candidates: "+wire.Snippet(body))
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
	tr := llm.Transcription{Text: strings.TrimSpace(b.String())}
	switch c.FinishReason {
	case "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY":
		return llm.Transcription{}, llm.NewError("", llm.KindContentFilter, "the transcript was withheld: "+c.FinishReason)
	case "STOP", "":
	case "MAX_TOKENS":
		tr.Truncated = true
	default:
		if tr.Text == "" {
			// OTHER, LANGUAGE, MALFORMED_…: no transcript, and no saying why.
			return llm.Transcription{}, llm.NewError("", llm.KindUnknown, "the model stopped without a transcript: "+c.FinishReason)
		}
	}
	if strings.Trim(tr.Text, " .") == noSpeech {
		tr.Text = ""
	}
	return tr, nil
}

// baseType is mimeType without parameters, lower case: WhatsApp sends
// "audio/ogg; codecs=opus".
func baseType(mimeType string) string {
	if mt, _, err := mime.ParseMediaType(mimeType); err == nil {
		return mt
	}
	return strings.ToLower(strings.TrimSpace(mimeType))
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
