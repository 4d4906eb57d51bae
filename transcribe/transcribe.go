// Package transcribe turns audio into text through a provider from
// llm.providers whose adapter is an llm.Transcriber: OpenAI-compatible
// (OpenAI, Groq, a local whisper server, most self-hosted runtimes) or
// Gemini. The HTTP is the adapter's; this package keeps the cache, the
// one call per content, and errors worded for media.transcription.
//
// Transcripts are cached in SQLite by content hash and model, so the same
// bytes are sent to a provider once, across restarts, and concurrent
// requests for the same bytes share one provider call.
package transcribe

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/gemini"
	"github.com/botd-dev/botd/llm/openai"
	"github.com/botd-dev/botd/llm/providers"
)

const (
	// DefaultOpenAIMaxBytes is OpenAI's upload limit for a transcription
	// (its 413 says 26214400); most compatible servers take at least that.
	DefaultOpenAIMaxBytes = 25 << 20
	// DefaultGeminiMaxBytes keeps an inline request, with the audio grown by
	// a third in base64, under Gemini's 20 MB request limit.
	DefaultGeminiMaxBytes = 14 << 20
	// DefaultTimeout bounds one provider call of the default HTTP client:
	// the answer only comes once the whole file is transcribed, which takes
	// a while for half an hour of audio.
	DefaultTimeout = 10 * time.Minute
)

// ErrNotConfigured says that no transcription provider is set, and how to
// set one; it is what a voice note gets instead of a transcript.
var ErrNotConfigured = errors.New("voice and audio are not transcribed: set media.transcription: {provider: NAME, model: MODEL} " +
	"to a provider of llm.providers of type openai (OpenAI, Groq, a local whisper server; e.g. model gpt-4o-mini-transcribe " +
	"or whisper-large-v3) or gemini (e.g. model gemini-2.5-flash)")

// ErrTooLarge marks audio over the size a provider takes, refused before
// upload or by the provider (HTTP 413); test with errors.Is.
var ErrTooLarge = errors.New("audio too large to transcribe")

// Options configure a Transcriber. Type, BaseURL and APIKey come from the
// provider that media.transcription names, Model from media.transcription.
type Options struct {
	// Name is the provider's key under llm.providers; errors name it ("check
	// llm.providers.groq.api_key"). Empty means Type.
	Name string
	// Type is openai or gemini; anthropic has no transcription API.
	Type string
	// BaseURL is the provider's base URL as the LLM adapters take it
	// (".../v1" for openai); empty means the vendor's public API.
	BaseURL string
	APIKey  string
	Model   string
	// DB is the store's database; transcripts are cached in its
	// media_transcripts table.
	DB *sql.DB
	// HTTP is the client for provider calls; nil means one with
	// DefaultTimeout.
	HTTP *http.Client
	// MaxBytes refuses larger audio before any upload; 0 means the
	// default of the type (DefaultOpenAIMaxBytes, DefaultGeminiMaxBytes).
	MaxBytes int64
	Log      *slog.Logger
}

// Transcript is what a provider heard in one audio file.
type Transcript struct {
	// Text is the transcript. Empty, with no error, means the provider heard
	// no speech (silence, music); that answer is cached like any other, since
	// the same bytes would get it again.
	Text string
	// Language is the spoken language as the provider names it ("english",
	// "de"); empty when it does not say (Gemini, plain json answers).
	Language string
	// Duration is the length of the audio as the provider measured it; zero
	// when it does not say.
	Duration time.Duration
	// Cached is true when the transcript came from the cache, costing no
	// provider call.
	Cached bool
	// Model is the model that made the transcript.
	Model string
}

// Transcriber transcribes audio through one provider and model. It is safe
// for concurrent use.
type Transcriber struct {
	o      Options
	vendor llm.Transcriber

	mu      sync.Mutex
	flights map[string]*flight

	joined func() // test hook: a caller joined a flight
}

// audio is one Transcribe call's input.
type audio struct {
	f          io.ReaderAt
	size       int64
	name, mime string
}

// flight is one provider call that every concurrent Transcribe of the same
// bytes waits on.
type flight struct {
	done chan struct{}
	tr   Transcript
	err  error
	// abandoned is set when the call failed because its caller gave up:
	// that says nothing about the audio, so waiters still interested try
	// again with their own reader.
	abandoned bool
}

// New returns a Transcriber. It does no I/O.
func New(o Options) (*Transcriber, error) {
	o.Type = strings.ToLower(strings.TrimSpace(o.Type))
	if o.Name == "" {
		o.Name = o.Type
	}
	t := &Transcriber{flights: map[string]*flight{}}
	switch o.Type {
	case "":
		return nil, ErrNotConfigured
	case "openai":
		if o.BaseURL == "" {
			o.BaseURL = openai.DefaultBaseURL
		}
		if o.MaxBytes <= 0 {
			o.MaxBytes = DefaultOpenAIMaxBytes
		}
	case "gemini":
		if o.BaseURL == "" {
			o.BaseURL = gemini.DefaultBaseURL
		}
		if o.MaxBytes <= 0 {
			o.MaxBytes = DefaultGeminiMaxBytes
		}
	case "anthropic":
		return nil, fmt.Errorf("transcribe: provider %s: anthropic has no transcription API; use an openai-compatible or gemini provider", o.Name)
	default:
		return nil, fmt.Errorf("transcribe: provider %s has type %q; transcription needs type openai or gemini", o.Name, o.Type)
	}
	if o.Model == "" {
		return nil, fmt.Errorf("transcribe: media.transcription.model is empty: name the model of provider %s that transcribes", o.Name)
	}
	if o.DB == nil {
		return nil, errors.New("transcribe: no database for the transcript cache")
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: DefaultTimeout}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	t.o = o
	p, err := providers.NewProvider(o.Type, o.Name, o.APIKey, o.BaseURL, o.HTTP)
	if err != nil {
		return nil, fmt.Errorf("transcribe: %w", err)
	}
	// Both types the switch above lets through have a transcription API.
	t.vendor = p.(llm.Transcriber)
	return t, nil
}

// Transcribe returns the transcript of the audio in f: size bytes of type
// mime, originally called name (which picks the file name the provider
// sees). The cache is keyed by the SHA-256 of the bytes and the model, so a
// cached transcript costs no provider call, and concurrent calls for the
// same bytes share one. f is not read after Transcribe returns.
//
// Provider failures are *llm.Error, classified like the LLM seam's (auth,
// rate_limit, bad_request…; llm.IsRetryable says whether to try again);
// audio over MaxBytes, or refused as too large, also matches ErrTooLarge.
func (t *Transcriber) Transcribe(ctx context.Context, f io.ReaderAt, size int64, name, mime string) (Transcript, error) {
	if size > t.o.MaxBytes {
		return Transcript{}, fmt.Errorf("transcribe: %w: %s is %s, more than the %s that provider %s is given",
			ErrTooLarge, describe(name, mime), megabytes(size), megabytes(t.o.MaxBytes), t.o.Name)
	}
	if size <= 0 {
		return Transcript{}, fmt.Errorf("transcribe: %s has no bytes", describe(name, mime))
	}
	key, err := hash(f, size)
	if err != nil {
		return Transcript{}, fmt.Errorf("transcribe: read %s: %w", describe(name, mime), err)
	}
	a := audio{f: f, size: size, name: name, mime: mime}
	for {
		if tr, ok := t.lookup(ctx, key); ok {
			return tr, nil
		}
		tr, retry, err := t.shared(ctx, key, a)
		if !retry {
			return tr, err
		}
	}
}

// shared makes the provider call for key, or waits for the one under way.
// retry says the call waited on was abandoned by its caller.
func (t *Transcriber) shared(ctx context.Context, key string, a audio) (tr Transcript, retry bool, err error) {
	t.mu.Lock()
	f, joined := t.flights[key]
	if !joined {
		f = &flight{done: make(chan struct{})}
		t.flights[key] = f
	}
	t.mu.Unlock()

	if joined {
		if t.joined != nil {
			t.joined()
		}
		select {
		case <-f.done:
			if f.abandoned && ctx.Err() == nil {
				return Transcript{}, true, nil
			}
			// The leader's call answered this one too: it cost nothing more.
			tr := f.tr
			tr.Cached = true
			return tr, false, f.err
		case <-ctx.Done():
			return Transcript{}, false, fmt.Errorf("transcribe: %w", llm.FromTransport(t.o.Name, ctx.Err()))
		}
	}

	// The call runs on this caller's reader and context, so its
	// cancellation stops the upload; waiters then start over with theirs.
	defer func() {
		// Whatever happens in the call, the flight lands and every waiter
		// hears of it; a panic is an error, not a dead daemon.
		if p := recover(); p != nil {
			t.o.Log.Error("transcription panicked", "provider", t.o.Name, "model", t.o.Model, "panic", p, "stack", string(debug.Stack()))
			f.tr, f.err = Transcript{}, fmt.Errorf("transcribe: transcribing %s with %s crashed: %v", describe(a.name, a.mime), t.o.Name, p)
		}
		f.abandoned = f.err != nil && ctx.Err() != nil
		t.mu.Lock()
		delete(t.flights, key)
		t.mu.Unlock()
		close(f.done)
		tr, retry, err = f.tr, false, f.err
	}()
	// Another caller may have finished between our cache miss and taking
	// the flight; it stores before it lands, so looking again suffices.
	if c, ok := t.lookup(ctx, key); ok {
		f.tr = c
		return
	}
	f.tr, f.err = t.transcribe(ctx, key, a)
	return
}

// transcribe makes the provider call and caches its answer.
func (t *Transcriber) transcribe(ctx context.Context, key string, a audio) (Transcript, error) {
	start := time.Now()
	tr, err := t.call(ctx, a)
	if err != nil {
		level := slog.LevelWarn
		if ctx.Err() != nil {
			level = slog.LevelDebug // the caller gave up; nothing is wrong
		}
		t.o.Log.Log(ctx, level, "transcription failed", "provider", t.o.Name, "model", t.o.Model, "bytes", a.size, "took", time.Since(start), "err", err)
		return Transcript{}, fmt.Errorf("transcribe: %w", err)
	}
	tr.Model = t.o.Model
	t.o.Log.Info("transcribed", "provider", t.o.Name, "model", t.o.Model, "sha256", key[:12], "bytes", a.size,
		"chars", len(tr.Text), "audio", tr.Duration, "took", time.Since(start))
	// What was paid for is kept even when the caller has just given up.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := t.o.DB.ExecContext(sctx, `INSERT INTO media_transcripts(sha256, model, text, language, duration_ms, created)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(sha256, model) DO UPDATE SET text = excluded.text, language = excluded.language,
			duration_ms = excluded.duration_ms, created = excluded.created`,
		key, t.o.Model, tr.Text, tr.Language, tr.Duration.Milliseconds(), time.Now().UnixMilli()); err != nil {
		// The transcript is still good; the next fetch pays again.
		t.o.Log.Warn("transcript not cached", "sha256", key[:12], "model", t.o.Model, "err", err)
	}
	return tr, nil
}

// lookup returns the cached transcript of key. A failing cache is logged
// and treated as a miss: a transcript that costs a call beats none.
func (t *Transcriber) lookup(ctx context.Context, key string) (Transcript, bool) {
	tr := Transcript{Cached: true, Model: t.o.Model}
	var ms int64
	err := t.o.DB.QueryRowContext(ctx, `SELECT text, language, duration_ms FROM media_transcripts WHERE sha256 = ? AND model = ?`,
		key, t.o.Model).Scan(&tr.Text, &tr.Language, &ms)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Transcript{}, false
	case err != nil:
		if ctx.Err() == nil {
			t.o.Log.Warn("transcript cache lookup failed", "sha256", key[:12], "model", t.o.Model, "err", err)
		}
		return Transcript{}, false
	}
	tr.Duration = time.Duration(ms) * time.Millisecond
	return tr, true
}

// hash is the hex SHA-256 of the size bytes of f; fewer bytes is an error,
// as the upload would then not match its declared length.
func hash(f io.ReaderAt, size int64) (string, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(f, 0, size))
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("only %d of %d bytes could be read", n, size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// megabytes renders a size for messages.
func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// describe names the audio in messages.
func describe(name, mime string) string {
	switch {
	case name != "":
		return fmt.Sprintf("%q", name)
	case mime != "":
		return "the " + mime + " audio"
	}
	return "the audio"
}

// call asks the vendor for a transcript of a.
func (t *Transcriber) call(ctx context.Context, a audio) (Transcript, error) {
	v, err := t.vendor.Transcribe(ctx, llm.TranscribeRequest{Model: t.o.Model, MaxBytes: maxResponseBytes,
		Audio: llm.File{R: a.f, Size: a.size, Name: a.name, MIME: a.mime}})
	if err != nil {
		return Transcript{}, t.explain(err, a)
	}
	tr := Transcript{Text: v.Text, Language: v.Language, Duration: v.Duration}
	if v.Truncated {
		t.o.Log.Warn("transcript cut off at the model's output limit", "provider", t.o.Name, "model", t.o.Model, "chars", len(tr.Text))
		tr.Text += truncatedNote
	}
	return tr, nil
}

// maxResponseBytes bounds an answer: verbose_json of half an hour of speech
// with its segments is a few MB; more is not a transcript.
const maxResponseBytes = 16 << 20

// truncatedNote ends a transcript the model stopped writing at its output
// limit, so that the reader knows that it is not all that was said.
const truncatedNote = " [transcript cut off: the model reached its output limit]"

// Provider is the configured provider's name, for the bill.
func (t *Transcriber) Provider() string { return t.o.Name }

// Model is the configured transcription model.
func (t *Transcriber) Model() string { return t.o.Model }
