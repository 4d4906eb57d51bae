package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

var _ llm.Transcriber = (*Provider)(nil)

// Transcribe posts the audio to {base_url}/audio/transcriptions. It asks
// for verbose_json, which carries duration and language, from models that
// are known to give it, and falls back to json when a server refuses it.
func (p *Provider) Transcribe(ctx context.Context, r llm.TranscribeRequest) (llm.Transcription, error) {
	format := "json"
	if verboseJSON(r.Model) {
		format = "verbose_json"
	}
	tr, err := p.transcribe(ctx, r, format)
	if format == "verbose_json" && isFormatRefusal(err) {
		tr, err = p.transcribe(ctx, r, "json")
	}
	return tr, err
}

// verboseJSON reports whether model is a Whisper (OpenAI's whisper-1,
// Groq's and local whisper-large-v3, distil-whisper…): those answer
// verbose_json, while OpenAI's gpt-4o-*-transcribe reject it.
func verboseJSON(model string) bool {
	return strings.Contains(strings.ToLower(model), "whisper")
}

// isFormatRefusal reports whether err is a server refusing
// response_format=verbose_json (OpenAI's gpt-4o-*-transcribe models and
// some compatible servers take json only).
func isFormatRefusal(err error) bool {
	e, ok := err.(*llm.Error)
	return ok && e.Kind == llm.KindBadRequest && e.Status != http.StatusRequestEntityTooLarge &&
		(strings.Contains(e.Message, "response_format") || strings.Contains(e.Message, "verbose_json"))
}

func (p *Provider) transcribe(ctx context.Context, r llm.TranscribeRequest, format string) (llm.Transcription, error) {
	a := r.Audio
	// The multipart frame around the file is built once; the file itself
	// is streamed from a.R between head and tail, so memory stays flat and
	// the length is known (some servers refuse chunked uploads).
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("model", r.Model)
	mw.WriteField("response_format", format)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, fileName(a.Name, a.MIME)))
	h.Set("Content-Type", partType(a.MIME))
	if _, err := mw.CreatePart(h); err != nil {
		return llm.Transcription{}, p.Client.Finish(llm.Errorf(p.Name(), llm.KindBadRequest, err, "build request: %v", err))
	}
	split := buf.Len()
	mw.Close()
	head, tail := buf.Bytes()[:split], buf.Bytes()[split:]

	header := p.header()
	header.Set("Content-Type", mw.FormDataContentType())
	header.Set("Accept", "application/json")
	max := r.MaxBytes
	if max <= 0 {
		max = wire.MaxTranscriptBytes
	}
	body, rh, err := p.Client.Upload(ctx, wire.JoinURL(p.BaseURL, "/audio/transcriptions"), header,
		int64(len(head))+a.Size+int64(len(tail)),
		func() io.Reader {
			return io.MultiReader(bytes.NewReader(head), io.NewSectionReader(a.R, 0, a.Size), bytes.NewReader(tail))
		}, max)
	if err != nil {
		return llm.Transcription{}, err
	}
	tr, e := transcriptAnswer(body, rh.Get("Content-Type"))
	if e != nil {
		return llm.Transcription{}, p.Client.Finish(e)
	}
	return tr, nil
}

// transcriptAnswer reads {"text", "language", "duration"} (verbose_json),
// a plain {"text"} with perhaps usage in seconds (json), or, from servers
// that ignore response_format, the bare text.
func transcriptAnswer(body []byte, ctype string) (llm.Transcription, *llm.Error) {
	var r struct {
		Text     *string         `json:"text"`
		Language string          `json:"language"`
		Duration json.Number     `json:"duration"`
		Error    json.RawMessage `json:"error"`
		Usage    *struct {
			Type    string      `json:"type"`
			Seconds json.Number `json:"seconds"`
		} `json:"usage"`
	}
	// The Content-Type is no guide: servers send JSON as text/plain and
	// text as application/octet-stream.
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		if mt, _, _ := mime.ParseMediaType(ctype); mt != "application/json" {
			return llm.Transcription{Text: string(trimmed)}, nil
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return llm.Transcription{}, llm.Errorf("", llm.KindUnknown, err, "unreadable answer: %s", wire.Snippet(body))
	}
	if r.Text == nil {
		if len(r.Error) > 0 && string(r.Error) != "null" {
			// Proxies answer 200 with an error document.
			return llm.Transcription{}, parseError(0, nil, body)
		}
		return llm.Transcription{}, llm.NewError("", llm.KindUnknown, "the answer has no text: "+wire.Snippet(body))
	}
	tr := llm.Transcription{Text: strings.TrimSpace(*r.Text), Language: r.Language}
	if s, ok := seconds(r.Duration); ok {
		tr.Duration = time.Duration(s * float64(time.Second))
	} else if r.Usage != nil && r.Usage.Type == "duration" {
		if s, ok := seconds(r.Usage.Seconds); ok {
			tr.Duration = time.Duration(s * float64(time.Second))
		}
	}
	return tr, nil
}

// seconds parses a duration in seconds given as a JSON number or string.
func seconds(n json.Number) (float64, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil && f > 0
}

// extensions maps audio types to the file extensions the
// OpenAI-compatible servers recognise; they pick the decoder by extension
// (OpenAI: flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm). The first
// is used when the name has none of them.
var extensions = map[string][]string{
	"audio/ogg":       {".ogg", ".oga", ".opus"}, // Telegram and WhatsApp voice notes: OGG/Opus
	"audio/opus":      {".ogg", ".oga", ".opus"},
	"application/ogg": {".ogg", ".oga"},
	"audio/mpeg":      {".mp3", ".mpga", ".mpeg"},
	"audio/mp3":       {".mp3", ".mpga", ".mpeg"},
	"audio/mp4":       {".m4a", ".mp4"},
	"audio/m4a":       {".m4a", ".mp4"},
	"audio/x-m4a":     {".m4a", ".mp4"},
	"audio/aac":       {".aac", ".m4a"},
	"video/mp4":       {".mp4", ".m4a"}, // video notes: the server takes the audio track
	"audio/wav":       {".wav"},
	"audio/x-wav":     {".wav"},
	"audio/wave":      {".wav"},
	"audio/vnd.wave":  {".wav"},
	"audio/webm":      {".webm"},
	"video/webm":      {".webm"},
	"audio/flac":      {".flac"},
	"audio/x-flac":    {".flac"},
	"audio/amr":       {".amr"},
}

// fileName is the multipart file name for audio called name: safe to quote
// (names come from strangers) and ending in an extension that matches its
// type, since that is how the server knows the format. The type wins over
// the name's extension: it was sniffed from the bytes.
func fileName(name, mimeType string) string {
	base := path.Base(strings.ReplaceAll(name, `\`, "/"))
	ext := strings.ToLower(path.Ext(base))
	stem := strings.TrimSuffix(base, path.Ext(base))
	if ext == "." || base == "/" {
		// "", ".", "..", "/": no name at all.
		stem, ext = "", ""
	}
	if exts, ok := extensions[baseType(mimeType)]; ok && !slices.Contains(exts, ext) {
		ext = exts[0]
	}
	keep := func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}
	stem = strings.Trim(strings.Map(keep, stem), "._")
	if len(stem) > 64 {
		stem = stem[:64]
	}
	if stem == "" {
		stem = "audio"
	}
	return stem + strings.ReplaceAll(strings.Map(keep, ext), "_", "")
}

// baseType is mimeType without parameters, lower case: WhatsApp sends
// "audio/ogg; codecs=opus".
func baseType(mimeType string) string {
	if mt, _, err := mime.ParseMediaType(mimeType); err == nil {
		return mt
	}
	return strings.ToLower(strings.TrimSpace(mimeType))
}

// partType is the Content-Type of the file part.
func partType(mimeType string) string {
	if mt := baseType(mimeType); strings.Count(mt, "/") == 1 && !strings.ContainsAny(mt, "\r\n") {
		return mt
	}
	return "application/octet-stream"
}
