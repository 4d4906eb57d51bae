package generate

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/botd-dev/botd/llm"
)

// b64Max is how long a base64 answer may be for an image of at most max
// bytes, with room for the JSON around it.
func b64Max(max int64) int64 { return max/3*4 + 8<<10 }

// openAIImages is POST /images/generations and, with a source image,
// POST /images/edits (multipart), both answering b64_json.
type openAIImages struct{ o Options }

func (c *openAIImages) CanEdit() bool { return true }

// dalle reports the older models, which answer a URL unless asked for
// b64_json; gpt-image-* always answer base64 and refuse the parameter.
func dalle(model string) bool { return strings.HasPrefix(strings.ToLower(model), "dall-e") }

func (c *openAIImages) Image(ctx context.Context, r ImageRequest) (Image, error) {
	var req *http.Request
	var err error
	if r.Source != nil {
		req, err = c.edit(ctx, r)
	} else {
		body := map[string]any{"model": c.o.Model, "prompt": r.Prompt, "n": 1}
		if r.Size != "" {
			body["size"] = r.Size
		}
		if dalle(c.o.Model) {
			body["response_format"] = "b64_json"
		}
		b, _ := json.Marshal(body)
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, joinURL(c.o.BaseURL, "/images/generations"), bytes.NewReader(b))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		return Image{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindBadRequest, err, "build request: %v", err))
	}
	authorize(&c.o, req.Header)
	req.Header.Set("Accept", "application/json")
	resp, err := call(&c.o, req)
	if err != nil {
		return Image{}, err
	}
	defer resp.Body.Close()
	b, err := readAll(&c.o, resp.Body, b64Max(c.o.MaxBytes))
	if err != nil {
		return Image{}, err
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
	if err := json.Unmarshal(b, &ans); err != nil {
		return Image{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindUnknown, err, "the answer is not an Images API answer: %s", snippet(b, resp.StatusCode)))
	}
	if len(ans.Data) == 0 || ans.Data[0].B64 == "" {
		return Image{}, fail(&c.o, llm.NewError(c.o.Name, llm.KindUnknown, "the answer holds no image (b64_json)"))
	}
	data, err := base64.StdEncoding.DecodeString(ans.Data[0].B64)
	if err != nil {
		return Image{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindUnknown, err, "the image is not valid base64: %v", err))
	}
	mime := "image/png"
	if f := ans.OutputFormat; f == "jpeg" || f == "webp" {
		mime = "image/" + f
	}
	return Image{Data: data, MIME: mime, Note: ans.Data[0].RevisedPrompt,
		Usage: Usage{InputTokens: ans.Usage.InputTokens, OutputTokens: ans.Usage.OutputTokens}}, nil
}

// edit builds the multipart request of /images/edits. The frame is built
// once and the image streamed from its descriptor between head and tail,
// so memory does not grow with the source, and the length is known.
func (c *openAIImages) edit(ctx context.Context, r ImageRequest) (*http.Request, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("model", c.o.Model)
	mw.WriteField("prompt", r.Prompt)
	mw.WriteField("n", "1")
	if r.Size != "" {
		mw.WriteField("size", r.Size)
	}
	if dalle(c.o.Model) {
		mw.WriteField("response_format", "b64_json")
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="image"; filename="%s"`, editName(r.Source.MIME)))
	h.Set("Content-Type", r.Source.MIME)
	if _, err := mw.CreatePart(h); err != nil {
		return nil, err
	}
	split := buf.Len()
	mw.Close()
	head, tail := buf.Bytes()[:split], buf.Bytes()[split:]
	src := r.Source
	body := func() io.Reader {
		return io.MultiReader(bytes.NewReader(head), io.NewSectionReader(src.File, 0, src.Size), bytes.NewReader(tail))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(c.o.BaseURL, "/images/edits"), body())
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(head)) + src.Size + int64(len(tail))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body()), nil }
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return req, nil
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

// geminiImages is generateContent with responseModalities TEXT and IMAGE;
// a source image goes inline beside the prompt.
type geminiImages struct{ o Options }

func (c *geminiImages) CanEdit() bool { return true }

func (c *geminiImages) Image(ctx context.Context, r ImageRequest) (Image, error) {
	type inline struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	type part struct {
		Text       string  `json:"text,omitempty"`
		InlineData *inline `json:"inlineData,omitempty"`
	}
	parts := []part{{Text: r.Prompt}}
	if r.Source != nil {
		// Inline data is base64 in the JSON: bounded by the caller's
		// check of the source's size.
		b, err := io.ReadAll(io.NewSectionReader(r.Source.File, 0, r.Source.Size))
		if err != nil {
			return Image{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindBadRequest, err, "read the source image: %v", err))
		}
		parts = append(parts, part{InlineData: &inline{MIMEType: r.Source.MIME, Data: base64.StdEncoding.EncodeToString(b)}})
	}
	cfg := map[string]any{"responseModalities": []string{"TEXT", "IMAGE"}}
	if ar := aspectRatio(r.Size); ar != "" {
		// Gemini takes an aspect ratio, not pixels.
		cfg["imageConfig"] = map[string]any{"aspectRatio": ar}
	}
	body := map[string]any{
		"contents":         []any{map[string]any{"role": "user", "parts": parts}},
		"generationConfig": cfg,
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		joinURL(c.o.BaseURL, "/v1beta/models/"+url.PathEscape(c.o.Model)+":generateContent"), bytes.NewReader(b))
	if err != nil {
		return Image{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindBadRequest, err, "build request: %v", err))
	}
	req.Header.Set("Content-Type", "application/json")
	authorize(&c.o, req.Header)
	resp, err := call(&c.o, req)
	if err != nil {
		return Image{}, err
	}
	defer resp.Body.Close()
	raw, err := readAll(&c.o, resp.Body, b64Max(c.o.MaxBytes))
	if err != nil {
		return Image{}, err
	}
	var ans struct {
		Candidates []struct {
			Content struct {
				Parts []part `json:"parts"`
			} `json:"content"`
			FinishReason  string `json:"finishReason"`
			FinishMessage string `json:"finishMessage"`
		} `json:"candidates"`
		PromptFeedback struct {
			BlockReason        string `json:"blockReason"`
			BlockReasonMessage string `json:"blockReasonMessage"`
		} `json:"promptFeedback"`
		UsageMetadata struct {
			PromptTokenCount     int64 `json:"promptTokenCount"`
			CandidatesTokenCount int64 `json:"candidatesTokenCount"`
		} `json:"usageMetadata"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return Image{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindUnknown, err, "the answer is not a generateContent answer: %s", snippet(raw, resp.StatusCode)))
	}
	if br := ans.PromptFeedback.BlockReason; br != "" {
		return Image{}, fail(&c.o, &llm.Error{Kind: llm.KindContentFilter, Code: br,
			Message: strings.TrimSpace("the prompt was blocked (" + br + ") " + ans.PromptFeedback.BlockReasonMessage)})
	}
	if len(ans.Candidates) == 0 {
		return Image{}, fail(&c.o, llm.NewError(c.o.Name, llm.KindUnknown, "the answer holds no candidate"))
	}
	cand := ans.Candidates[0]
	img := Image{Usage: Usage{InputTokens: ans.UsageMetadata.PromptTokenCount, OutputTokens: ans.UsageMetadata.CandidatesTokenCount}}
	var notes []string
	for _, p := range cand.Content.Parts {
		switch {
		case p.InlineData != nil && img.Data == nil && strings.HasPrefix(p.InlineData.MIMEType, "image/"):
			data, err := base64.StdEncoding.DecodeString(p.InlineData.Data)
			if err != nil {
				return Image{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindUnknown, err, "the image is not valid base64: %v", err))
			}
			img.Data, img.MIME = data, p.InlineData.MIMEType
		case p.Text != "":
			notes = append(notes, p.Text)
		}
	}
	img.Note = oneLine(strings.Join(notes, " "), 500)
	if img.Data != nil {
		return img, nil
	}
	switch cand.FinishReason {
	case "SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_PROHIBITED_CONTENT":
		msg := strings.TrimSpace("no image (" + cand.FinishReason + ") " + cand.FinishMessage)
		return Image{}, fail(&c.o, &llm.Error{Kind: llm.KindContentFilter, Code: cand.FinishReason, Message: msg})
	}
	// The model answered in words only: often a refusal in its own words,
	// or a model without image output.
	msg := "the model answered without an image"
	if img.Note != "" {
		msg += ": " + img.Note
	}
	return Image{}, fail(&c.o, llm.NewError(c.o.Name, llm.KindUnknown, msg+"; check that media.generation.image.model makes images"))
}

// geminiRatios are the aspect ratios Gemini image models take.
var geminiRatios = []struct {
	name string
	w, h float64
}{{"1:1", 1, 1}, {"2:3", 2, 3}, {"3:2", 3, 2}, {"3:4", 3, 4}, {"4:3", 4, 3}, {"4:5", 4, 5}, {"5:4", 5, 4},
	{"9:16", 9, 16}, {"16:9", 16, 9}, {"21:9", 21, 9}}

// aspectRatio is the supported ratio nearest to a WIDTHxHEIGHT size; ""
// for none or "auto".
func aspectRatio(size string) string {
	var w, h float64
	if _, err := fmt.Sscanf(size, "%fx%f", &w, &h); err != nil || w <= 0 || h <= 0 {
		return ""
	}
	best, dist := "", math.MaxFloat64
	for _, r := range geminiRatios {
		if d := math.Abs(math.Log(w/h) - math.Log(r.w/r.h)); d < dist {
			best, dist = r.name, d
		}
	}
	return best
}
