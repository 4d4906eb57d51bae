package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

var (
	_ llm.ImageMaker  = (*Provider)(nil)
	_ llm.SpeechMaker = (*Provider)(nil)
	_ llm.VideoMaker  = (*Provider)(nil)
)

// b64Max is how long a base64 answer may be for an image of at most max
// bytes, with room for the JSON around it.
func b64Max(max int64) int64 { return max/3*4 + 8<<10 }

// dalle reports the older models, which answer a URL unless asked for
// b64_json; gpt-image-* always answer base64 and refuse the parameter.
func dalle(model string) bool { return strings.HasPrefix(strings.ToLower(model), "dall-e") }

// MakeImage is POST /images/generations and, with a source image, POST
// /images/edits (multipart), both answering b64_json.
func (p *Provider) MakeImage(ctx context.Context, r llm.ImageRequest) (llm.Image, error) {
	h := p.header()
	h.Set("Accept", "application/json")
	max := b64Max(r.MaxBytes)
	var b []byte
	var err error
	if r.Source != nil {
		b, err = p.edit(ctx, r, h, max)
	} else {
		body := map[string]any{"model": r.Model, "prompt": r.Prompt, "n": 1}
		if r.Size != "" {
			body["size"] = r.Size
		}
		if dalle(r.Model) {
			body["response_format"] = "b64_json"
		}
		j, _ := json.Marshal(body)
		h.Set("Content-Type", "application/json")
		b, _, err = p.Client.Do(ctx, http.MethodPost, wire.JoinURL(p.BaseURL, "/images/generations"), h, bytes.NewReader(j), max)
	}
	if err != nil {
		return llm.Image{}, err
	}
	var ans struct {
		Data []struct {
			B64           string `json:"b64_json"`
			RevisedPrompt string `json:"revised_prompt"`
		} `json:"data"`
		OutputFormat string `json:"output_format"`
		Usage        struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := p.Client.Answer(b, &ans, "an Images API answer"); err != nil {
		return llm.Image{}, err
	}
	if len(ans.Data) == 0 || ans.Data[0].B64 == "" {
		return llm.Image{}, p.Client.Finish(llm.NewError(p.Name(), llm.KindUnknown, "the answer holds no image (b64_json)"))
	}
	data, err := base64.StdEncoding.DecodeString(ans.Data[0].B64)
	if err != nil {
		return llm.Image{}, p.Client.Finish(llm.Errorf(p.Name(), llm.KindUnknown, err, "the image is not valid base64: %v", err))
	}
	mime := "image/png"
	if f := ans.OutputFormat; f == "jpeg" || f == "webp" {
		mime = "image/" + f
	}
	return llm.Image{Data: data, MIME: mime, Note: ans.Data[0].RevisedPrompt,
		Usage: llm.MediaUsage{InputTokens: ans.Usage.InputTokens, OutputTokens: ans.Usage.OutputTokens}}, nil
}

// edit posts the multipart request of /images/edits. The frame is built
// once and the image streamed from the source between head and tail, so
// memory does not grow with the source, and the length is known.
func (p *Provider) edit(ctx context.Context, r llm.ImageRequest, h http.Header, max int64) ([]byte, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("model", r.Model)
	mw.WriteField("prompt", r.Prompt)
	mw.WriteField("n", "1")
	if r.Size != "" {
		mw.WriteField("size", r.Size)
	}
	if dalle(r.Model) {
		mw.WriteField("response_format", "b64_json")
	}
	ph := textproto.MIMEHeader{}
	ph.Set("Content-Disposition", fmt.Sprintf(`form-data; name="image"; filename="%s"`, editName(r.Source.MIME)))
	ph.Set("Content-Type", r.Source.MIME)
	if _, err := mw.CreatePart(ph); err != nil {
		return nil, p.Client.Finish(llm.Errorf(p.Name(), llm.KindBadRequest, err, "build request: %v", err))
	}
	split := buf.Len()
	mw.Close()
	head, tail := buf.Bytes()[:split], buf.Bytes()[split:]
	src := r.Source
	h.Set("Content-Type", mw.FormDataContentType())
	b, _, err := p.Client.Upload(ctx, wire.JoinURL(p.BaseURL, "/images/edits"), h, int64(len(head))+src.Size+int64(len(tail)),
		func() io.Reader {
			return io.MultiReader(bytes.NewReader(head), io.NewSectionReader(src.R, 0, src.Size), bytes.NewReader(tail))
		}, max)
	return b, err
}

// editName is the file name sent for a source image: fixed by its type,
// never the sender's (a stranger's name has no place in a header).
func editName(mime string) string {
	switch mime {
	case "image/jpeg":
		return "source.jpg"
	case "image/webp":
		return "source.webp"
	}
	return "source.png"
}

// DefaultVoice is the voice asked for when none is named; every OpenAI TTS
// model has it.
const DefaultVoice = "alloy"

// MakeSpeech is POST /audio/speech with response_format opus: OGG/Opus,
// the format Telegram and WhatsApp play as a voice note.
func (p *Provider) MakeSpeech(ctx context.Context, r llm.SpeechRequest) (llm.Speech, error) {
	voice := r.Voice
	if voice == "" {
		voice = DefaultVoice
	}
	b, _ := json.Marshal(map[string]any{"model": r.Model, "input": r.Text, "voice": voice, "response_format": "opus"})
	h := p.header()
	h.Set("Content-Type", "application/json")
	resp, err := p.Client.Send(ctx, http.MethodPost, wire.JoinURL(p.BaseURL, "/audio/speech"), h, bytes.NewReader(b))
	if err != nil {
		return llm.Speech{}, err
	}
	// Streamed to the caller, who stores it under its cap.
	return llm.Speech{Body: resp.Body, MIME: "audio/ogg"}, nil
}

// The Videos API: POST /videos submits a job, GET /videos/{id} tells its
// status (queued, in_progress, completed, failed), GET
// /videos/{id}/content streams the MP4, DELETE /videos/{id} removes it.

// videoObject is the job as the API renders it.
type videoObject struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Progress int    `json:"progress"`
	Seconds  string `json:"seconds"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *Provider) job(v videoObject) llm.VideoJob {
	j := llm.VideoJob{ID: v.ID, State: llm.VideoState(v.Status), Progress: v.Progress}
	j.Seconds, _ = strconv.Atoi(v.Seconds)
	if v.Status == string(llm.VideoFailed) {
		e := &llm.Error{Kind: llm.KindUnknown, Message: "the video job failed"}
		if v.Error != nil {
			e.Code, e.Message = v.Error.Code, oneLine(v.Error.Message, 300)
			switch v.Error.Code {
			case "moderation_blocked", "content_policy_violation", "content_filter":
				e.Kind = llm.KindContentFilter
			}
		}
		j.Err = p.Client.Finish(e)
	}
	return j
}

// oneLine keeps a vendor's text on one line and short.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

func (p *Provider) SubmitVideo(ctx context.Context, r llm.VideoRequest) (llm.VideoJob, error) {
	body := map[string]any{"model": r.Model, "prompt": r.Prompt}
	if r.Seconds > 0 {
		// The API takes the duration as a string enum ("4", "8", "12").
		body["seconds"] = strconv.Itoa(r.Seconds)
	}
	if r.Size != "" {
		body["size"] = r.Size
	}
	b, _ := json.Marshal(body)
	h := p.header()
	h.Set("Content-Type", "application/json")
	return p.videoObject(ctx, http.MethodPost, wire.JoinURL(p.BaseURL, "/videos"), h, bytes.NewReader(b))
}

func (p *Provider) VideoStatus(ctx context.Context, id string) (llm.VideoJob, error) {
	return p.videoObject(ctx, http.MethodGet, wire.JoinURL(p.BaseURL, "/videos/"+url.PathEscape(id)), p.header(), nil)
}

func (p *Provider) videoObject(ctx context.Context, method, u string, h http.Header, body io.Reader) (llm.VideoJob, error) {
	h.Set("Accept", "application/json")
	b, _, err := p.Client.Do(ctx, method, u, h, body, 1<<20)
	if err != nil {
		return llm.VideoJob{}, err
	}
	var v videoObject
	if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
		return llm.VideoJob{}, p.Client.Finish(llm.NewError(p.Name(), llm.KindUnknown, "the answer is not a video job: "+wire.Snippet(b)))
	}
	return p.job(v), nil
}

func (p *Provider) VideoContent(ctx context.Context, id string) (io.ReadCloser, error) {
	resp, err := p.Client.Send(ctx, http.MethodGet, wire.JoinURL(p.BaseURL, "/videos/"+url.PathEscape(id)+"/content"), p.header(), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func (p *Provider) CancelVideo(ctx context.Context, id string) error {
	resp, err := p.Client.Send(ctx, http.MethodDelete, wire.JoinURL(p.BaseURL, "/videos/"+url.PathEscape(id)), p.header(), nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
