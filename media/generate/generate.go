// Package generate makes media through a provider of llm.providers:
// images (OpenAI's Images API, generations and edits; Gemini image models
// through generateContent), speech (the OpenAI-compatible speech API,
// asked for OGG/Opus so it plays as a voice note) and videos (OpenAI's
// Videos API: a job that is submitted, polled, downloaded and deleted).
//
// The HTTP is the vendor adapters' (llm/openai, llm/gemini: their
// ImageMaker, SpeechMaker and VideoMaker); this package picks the model,
// caps the answer and words the errors for media.generation. Every
// failure is an *llm.Error of the seam's kinds; a provider's
// content-policy refusal is KindContentFilter, which Refusal turns into a
// sentence for the chat. Bytes are not stored here: the media service
// streams them into the cache, which sniffs, caps and hashes them.
package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/gemini"
	"github.com/botd-dev/botd/llm/openai"
	"github.com/botd-dev/botd/llm/providers"
)

// DefaultTimeout bounds one provider call of the default HTTP client: an
// image takes up to a minute or two at high quality.
const DefaultTimeout = 5 * time.Minute

// Options configure a client. Type, BaseURL and APIKey come from the
// provider that media.generation.<kind> names, Model from that entry.
type Options struct {
	// Name is the provider's key under llm.providers; errors name it.
	Name    string
	Type    string // openai | gemini
	BaseURL string // as the LLM adapters take it (".../v1" for openai)
	APIKey  string
	Model   string
	// HTTP is the client for provider calls; nil means one with
	// DefaultTimeout.
	HTTP *http.Client
	// MaxBytes bounds what one answer may carry (a decoded image, an
	// audio or video download); the media service passes
	// media.max_download_bytes.
	MaxBytes int64
}

func (o *Options) defaults() {
	if o.Name == "" {
		o.Name = o.Type
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: DefaultTimeout}
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 100 << 20
	}
	if o.BaseURL == "" {
		switch o.Type {
		case "gemini":
			o.BaseURL = gemini.DefaultBaseURL
		default:
			o.BaseURL = openai.DefaultBaseURL
		}
	}
}

// Source is an image to edit: opened and checked by the caller, read only
// through this descriptor.
type Source struct {
	File *os.File
	Size int64
	MIME string
	Name string
}

// ImageRequest asks for one image.
type ImageRequest struct {
	Prompt string
	// Size is "1024x1024", "1536x1024", "1024x1536" or empty (the
	// model's default).
	Size string
	// Source, when set, is the image to edit.
	Source *Source
}

// Usage is what a provider reported for one call; zero when it said
// nothing (unit-priced models).
type Usage = llm.MediaUsage

// Image is one made image; MIME is what the provider declared (the cache
// sniffs the bytes), Note its own text beside the image (Gemini) or the
// prompt it revised (OpenAI), for the agent.
type Image = llm.Image

// Imager makes and edits images.
type Imager interface {
	Image(ctx context.Context, r ImageRequest) (Image, error)
	// CanEdit reports whether Source is understood.
	CanEdit() bool
}

// NewImager returns the image client of o.Type.
func NewImager(o Options) (Imager, error) {
	return open(o, "image generation", "image API (use openai or gemini)", func(c client[llm.ImageMaker]) Imager { return &imager{c} })
}

type imager struct{ client[llm.ImageMaker] }

func (c *imager) CanEdit() bool { return true }

func (c *imager) Image(ctx context.Context, r ImageRequest) (Image, error) {
	req := llm.ImageRequest{Model: c.o.Model, Prompt: r.Prompt, Size: r.Size, MaxBytes: c.o.MaxBytes}
	if s := r.Source; s != nil {
		req.Source = &llm.File{R: s.File, Size: s.Size, MIME: s.MIME, Name: s.Name}
	}
	img, err := c.v.MakeImage(ctx, req)
	if err != nil {
		return Image{}, c.o.explain(err)
	}
	return img, nil
}

// MaxSpeechChars is the longest text OpenAI's speech API takes.
const MaxSpeechChars = 4096

// SpeechRequest asks for words spoken.
type SpeechRequest struct {
	Text  string
	Voice string
}

// Speech is audio being downloaded; the caller closes Body.
type Speech = llm.Speech

// Speaker turns text into speech.
type Speaker interface {
	Speak(ctx context.Context, r SpeechRequest) (Speech, error)
}

// NewSpeaker returns the speech client of o.Type.
func NewSpeaker(o Options) (Speaker, error) {
	return open(o, "speech", "speech API (use an openai-compatible provider)", func(c client[llm.SpeechMaker]) Speaker { return &speaker{c} })
}

type speaker struct{ client[llm.SpeechMaker] }

func (c *speaker) Speak(ctx context.Context, r SpeechRequest) (Speech, error) {
	sp, err := c.v.MakeSpeech(ctx, llm.SpeechRequest{Model: c.o.Model, Text: r.Text, Voice: r.Voice})
	if err != nil {
		return Speech{}, c.o.explain(err)
	}
	return sp, nil
}

// VideoRequest asks for one clip.
type VideoRequest struct {
	Prompt  string
	Seconds int    // 4, 8 or 12; 0 is the model's default
	Size    string // "1280x720", "720x1280"...; empty is the default
}

// JobState is where a video job is.
type JobState = llm.VideoState

const (
	JobQueued     = llm.VideoQueued
	JobInProgress = llm.VideoInProgress
	JobCompleted  = llm.VideoCompleted
	JobFailed     = llm.VideoFailed
)

// Job is a provider's view of a video job; Err is why a failed job failed
// (an *llm.Error; KindContentFilter for a refusal).
type Job = llm.VideoJob

// Videos runs video jobs.
type Videos interface {
	Submit(ctx context.Context, r VideoRequest) (Job, error)
	Status(ctx context.Context, id string) (Job, error)
	// Content streams the finished video; the caller closes it.
	Content(ctx context.Context, id string) (io.ReadCloser, error)
	// Cancel deletes the job and its assets at the provider.
	Cancel(ctx context.Context, id string) error
}

// NewVideos returns the video client of o.Type.
func NewVideos(o Options) (Videos, error) {
	return open(o, "video generation", "videos API (use openai)", func(c client[llm.VideoMaker]) Videos { return &videos{c} })
}

type videos struct{ client[llm.VideoMaker] }

func (c *videos) Submit(ctx context.Context, r VideoRequest) (Job, error) {
	j, err := c.v.SubmitVideo(ctx, llm.VideoRequest{Model: c.o.Model, Prompt: r.Prompt, Seconds: r.Seconds, Size: r.Size})
	return j, c.notFound(err)
}

func (c *videos) Status(ctx context.Context, id string) (Job, error) {
	j, err := c.v.VideoStatus(ctx, id)
	return j, c.notFound(err)
}

func (c *videos) Content(ctx context.Context, id string) (io.ReadCloser, error) {
	body, err := c.v.VideoContent(ctx, id)
	return body, c.notFound(err)
}

func (c *videos) Cancel(ctx context.Context, id string) error {
	return c.notFound(c.v.CancelVideo(ctx, id))
}

// notFound marks a 404 on a job with ErrNotFound: the provider deleted
// it (or its assets expired), which no poll will change.
func (c *videos) notFound(err error) error {
	if err == nil {
		return nil
	}
	err = c.o.explain(err)
	if e, ok := err.(*llm.Error); ok && e.Status == http.StatusNotFound {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// ErrNotFound: the provider no longer knows a job (deleted, expired).
var ErrNotFound = errors.New("video job not found at the provider")

// Refusal reports whether err is a provider refusing the request under
// its content policy, and a sentence for the chat that says so. The
// vendor's words are kept short and on one line: they may quote the
// prompt, which came from a chat.
func Refusal(err error) (string, bool) {
	if llm.KindOf(err) != llm.KindContentFilter {
		return "", false
	}
	var e *llm.Error
	why := ""
	if errors.As(err, &e) {
		why = oneLine(e.Message, 200)
	}
	s := "The provider refused this request under its content policy, so nothing was made"
	if why != "" {
		s += " (it said: " + why + ")"
	}
	return s + ".", true
}

// oneLine keeps a provider's text on one line and short.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// vendor is the provider's adapter, whose optional capabilities say what
// it can make.
func (o *Options) vendor() any {
	p, err := providers.NewProvider(o.Type, o.Name, o.APIKey, o.BaseURL, o.HTTP)
	if err != nil {
		// An unknown type has no API of any kind; the caller says so.
		return nil
	}
	return p
}

// client is what every kind's client holds: its options and the
// provider's adapter as T, the API that kind of media needs.
type client[T any] struct {
	o Options
	v T
}

// open builds o's adapter as T and wraps it as the kind's client I; what
// names the kind and api the missing API in the error.
func open[T, I any](o Options, what, api string, wrap func(client[T]) I) (I, error) {
	o.defaults()
	v, ok := o.vendor().(T)
	if !ok {
		var none I
		return none, fmt.Errorf("%s: provider type %q has no %s", what, o.Type, api)
	}
	return wrap(client[T]{o: o, v: v}), nil
}
