package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/botd-dev/botd/llm"
)

// DefaultVoice is the voice asked for when neither the tool nor the
// config names one; every OpenAI TTS model has it.
const DefaultVoice = "alloy"

// MaxSpeechChars is the longest text /audio/speech takes (OpenAI: 4096).
const MaxSpeechChars = 4096

// openAISpeech is POST /audio/speech with response_format opus: OGG/Opus,
// the format Telegram and WhatsApp play as a voice note.
type openAISpeech struct{ o Options }

func (c *openAISpeech) Speak(ctx context.Context, r SpeechRequest) (Speech, error) {
	voice := r.Voice
	if voice == "" {
		voice = DefaultVoice
	}
	b, _ := json.Marshal(map[string]any{"model": c.o.Model, "input": r.Text, "voice": voice, "response_format": "opus"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(c.o.BaseURL, "/audio/speech"), bytes.NewReader(b))
	if err != nil {
		return Speech{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindBadRequest, err, "build request: %v", err))
	}
	req.Header.Set("Content-Type", "application/json")
	authorize(&c.o, req.Header)
	resp, err := call(&c.o, req)
	if err != nil {
		return Speech{}, err
	}
	// Streamed to the caller, who stores it under the cap.
	return Speech{Body: resp.Body, MIME: "audio/ogg"}, nil
}
