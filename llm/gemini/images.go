package gemini

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

var _ llm.ImageMaker = (*Provider)(nil)

// NoImage is the Code of the error of a model that answered in words
// only: often a refusal in its own words, or a model without image output.
const NoImage = "NO_IMAGE"

// MakeImage is generateContent with responseModalities TEXT and IMAGE; a
// source image goes inline beside the prompt.
func (p *Provider) MakeImage(ctx context.Context, r llm.ImageRequest) (llm.Image, error) {
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
		b, err := io.ReadAll(io.NewSectionReader(r.Source.R, 0, r.Source.Size))
		if err != nil {
			return llm.Image{}, p.Client.Finish(llm.Errorf(p.Name(), llm.KindBadRequest, err, "read the source image: %v", err))
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
	h := p.header()
	h.Set("Content-Type", "application/json")
	model := strings.TrimPrefix(r.Model, "models/")
	raw, _, err := p.Client.Do(ctx, http.MethodPost, wire.JoinURL(p.BaseURL, "/v1beta/models/"+url.PathEscape(model)+":generateContent"),
		h, bytes.NewReader(b), r.MaxBytes/3*4+8<<10)
	if err != nil {
		return llm.Image{}, err
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
		UsageMetadata usageMeta `json:"usageMetadata"`
	}
	if err := p.Client.Answer(raw, &ans, "a generateContent answer"); err != nil {
		return llm.Image{}, err
	}
	if br := ans.PromptFeedback.BlockReason; br != "" {
		return llm.Image{}, p.Client.Finish(&llm.Error{Kind: llm.KindContentFilter, Code: br,
			Message: strings.TrimSpace("the prompt was blocked (" + br + ") " + ans.PromptFeedback.BlockReasonMessage)})
	}
	if len(ans.Candidates) == 0 {
		return llm.Image{}, p.Client.Finish(llm.NewError(p.Name(), llm.KindUnknown, "the answer holds no candidate"))
	}
	cand := ans.Candidates[0]
	img := llm.Image{Usage: llm.MediaUsage{InputTokens: ans.UsageMetadata.PromptTokenCount, OutputTokens: ans.UsageMetadata.CandidatesTokenCount}}
	var notes []string
	for _, pt := range cand.Content.Parts {
		switch {
		case pt.InlineData != nil && img.Data == nil && strings.HasPrefix(pt.InlineData.MIMEType, "image/"):
			data, err := base64.StdEncoding.DecodeString(pt.InlineData.Data)
			if err != nil {
				return llm.Image{}, p.Client.Finish(llm.Errorf(p.Name(), llm.KindUnknown, err, "the image is not valid base64: %v", err))
			}
			img.Data, img.MIME = data, pt.InlineData.MIMEType
		case pt.Text != "":
			notes = append(notes, pt.Text)
		}
	}
	img.Note = oneLine(strings.Join(notes, " "), 500)
	if img.Data != nil {
		return img, nil
	}
	switch cand.FinishReason {
	case "SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_PROHIBITED_CONTENT":
		msg := strings.TrimSpace("no image (" + cand.FinishReason + ") " + cand.FinishMessage)
		return llm.Image{}, p.Client.Finish(&llm.Error{Kind: llm.KindContentFilter, Code: cand.FinishReason, Message: msg})
	}
	msg := "the model answered without an image"
	if img.Note != "" {
		msg += ": " + img.Note
	}
	return llm.Image{}, p.Client.Finish(&llm.Error{Kind: llm.KindUnknown, Code: NoImage, Message: msg})
}

// oneLine keeps the model's text on one line and short.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// imageRatios are the aspect ratios Gemini image models take.
var imageRatios = []struct {
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
	for _, r := range imageRatios {
		if d := math.Abs(math.Log(w/h) - math.Log(r.w/r.h)); d < dist {
			best, dist = r.name, d
		}
	}
	return best
}
