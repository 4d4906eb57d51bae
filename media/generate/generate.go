// Package generate makes media through a provider of llm.providers:
// images (OpenAI's Images API, generations and edits; Gemini image models
// through generateContent), speech (the OpenAI-compatible /audio/speech,
// asked for OGG/Opus so it plays as a voice note) and videos (OpenAI's
// Videos API: a job that is submitted, polled, downloaded and deleted).
//
// Like package transcribe it talks HTTP itself, with no vendor SDK, and
// every failure is an *llm.Error of the seam's kinds; a provider's
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
			o.BaseURL = "https://generativelanguage.googleapis.com"
		default:
			o.BaseURL = "https://api.openai.com/v1"
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
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Image is one made image.
type Image struct {
	Data []byte
	// MIME is what the provider declared; the cache sniffs the bytes.
	MIME string
	// Note is the provider's own text beside the image (Gemini), or the
	// prompt it revised (OpenAI), for the agent.
	Note  string
	Usage Usage
}

// Imager makes and edits images.
type Imager interface {
	Image(ctx context.Context, r ImageRequest) (Image, error)
	// CanEdit reports whether Source is understood.
	CanEdit() bool
}

// NewImager returns the image client of o.Type.
func NewImager(o Options) (Imager, error) {
	o.defaults()
	switch o.Type {
	case "openai":
		return &openAIImages{o: o}, nil
	case "gemini":
		return &geminiImages{o: o}, nil
	}
	return nil, fmt.Errorf("image generation: provider type %q has no image API (use openai or gemini)", o.Type)
}

// SpeechRequest asks for words spoken.
type SpeechRequest struct {
	Text  string
	Voice string
}

// Speech is audio being downloaded; the caller closes Body.
type Speech struct {
	Body io.ReadCloser
	MIME string
}

// Speaker turns text into speech.
type Speaker interface {
	Speak(ctx context.Context, r SpeechRequest) (Speech, error)
}

// NewSpeaker returns the speech client of o.Type.
func NewSpeaker(o Options) (Speaker, error) {
	o.defaults()
	if o.Type != "openai" {
		return nil, fmt.Errorf("speech: provider type %q has no /audio/speech (use an openai-compatible provider)", o.Type)
	}
	return &openAISpeech{o: o}, nil
}

// VideoRequest asks for one clip.
type VideoRequest struct {
	Prompt  string
	Seconds int    // 4, 8 or 12; 0 is the model's default
	Size    string // "1280x720", "720x1280"...; empty is the default
}

// JobState is where a video job is.
type JobState string

const (
	JobQueued     JobState = "queued"
	JobInProgress JobState = "in_progress"
	JobCompleted  JobState = "completed"
	JobFailed     JobState = "failed"
)

// Job is a provider's view of a video job.
type Job struct {
	ID       string
	State    JobState
	Progress int
	Seconds  int
	// Err is why a failed job failed (an *llm.Error; KindContentFilter
	// for a refusal).
	Err error
}

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
	o.defaults()
	if o.Type != "openai" {
		return nil, fmt.Errorf("video generation: provider type %q has no videos API (use openai)", o.Type)
	}
	return &openAIVideos{o: o}, nil
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

// maxErrorBytes bounds how much of an error answer is read.
const maxErrorBytes = 64 << 10

// call sends req and returns the answer when it is a 2xx; anything else
// is a classified *llm.Error. The caller closes the body.
func call(o *Options, req *http.Request) (*http.Response, error) {
	resp, err := o.HTTP.Do(req)
	if err != nil {
		return nil, fail(o, llm.FromTransport(o.Name, err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
		resp.Body.Close()
		e := classify(o, resp.StatusCode, b)
		e.RetryAfter = llm.ParseRetryAfter(resp.Header)
		return nil, fail(o, e)
	}
	return resp, nil
}

// readAll reads a JSON answer of at most max bytes.
func readAll(o *Options, r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fail(o, llm.FromTransport(o.Name, err))
	}
	if int64(len(b)) > max {
		return nil, fail(o, llm.NewError(o.Name, llm.KindUnknown, fmt.Sprintf("the answer is over %d bytes", max)))
	}
	return b, nil
}

// fail stamps the provider on e and scrubs the API key from its message.
func fail(o *Options, e *llm.Error) *llm.Error {
	e.Provider = o.Name
	e.Message = llm.Scrub(e.Message, o.APIKey)
	return e
}

// joinURL appends path to a base URL without doubling slashes.
func joinURL(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

func authorize(o *Options, h http.Header) {
	if o.APIKey == "" {
		return // a local server without a key
	}
	if o.Type == "gemini" {
		h.Set("x-goog-api-key", o.APIKey)
		return
	}
	h.Set("Authorization", "Bearer "+o.APIKey)
}
