// Package generation makes media for the agent: images (and edits of
// them), voice notes and videos, each through the model media.generation
// names (media/generate picks the client and words the refusals). What it
// makes is kept like a download (media.Service.Keep: cache, ref, group
// copy), billed on the group's bill under agent.max_cost_per_day, and,
// when asked, sent (media/sending). A video is a job that outlives the
// tool call (videojobs.go).
package generation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/botd-dev/botd/internal/progress"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/textclip"
	"github.com/botd-dev/botd/internal/wake"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/generate"
	"github.com/botd-dev/botd/media/sending"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// Ledger is where generation is accounted for and video jobs persist:
// *store.Store.
type Ledger interface {
	RecordGeneration(ctx context.Context, g store.Generation) error
	SpentSince(ctx context.Context, folder string, since time.Time) (int64, error)
	PutMessage(ctx context.Context, m store.Message) (int64, error)
	AddMediaJob(ctx context.Context, j store.MediaJob) (int64, error)
	MediaJobs(ctx context.Context, folder string, states ...string) ([]store.MediaJob, error)
	RecentMediaJobs(ctx context.Context, folder string, since time.Time, limit int) ([]store.MediaJob, error)
	MediaJob(ctx context.Context, folder string, id int64) (store.MediaJob, error)
	UpdateMediaJob(ctx context.Context, from string, j store.MediaJob) (bool, error)
}

// Model is a generation model as configured: its provider's name (for
// the bill) and the price it is charged at.
type Model struct {
	Provider string
	Name     string
	// Price is from media.generation.<kind>.price, else the known list
	// price; zero means unpriced.
	Price generate.Price
}

// Options wire a Service; each client is nil when its kind is not
// configured.
type Options struct {
	// Media keeps what is made, and fetches the image an edit starts
	// from; Sending sends it.
	Media     *media.Service
	Sending   *sending.Service
	Groups    *groups.Set
	GroupsDir string
	// Bill records what generation costs on the group's bill; nil falls
	// back to Ledger.
	Bill media.Bill
	Log  *slog.Logger

	Imager      generate.Imager
	ImageModel  Model
	Speaker     generate.Speaker
	SpeechModel Model
	// Voice is the default voice (media.generation.speech.voice).
	Voice             string
	Videos            generate.Videos
	VideoModel        Model
	VideoTimeout      time.Duration
	VideoJobsPerGroup int
	Ledger            Ledger
	// MaxCostPerDay (micro-cents) is agent.max_cost_per_day: past it a
	// group makes no more media that day. Zero is no limit.
	MaxCostPerDay int64
	Location      *time.Location
	// AssistantName signs what botd made in the chat's history.
	AssistantName string
	// Now is the clock of budgets and video jobs (tests); nil is time.Now.
	Now func() time.Time
	// PollMin and PollMax bound the backoff between polls of a video
	// job (defaults 5s and 1m).
	PollMin, PollMax time.Duration
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Service answers the generation tools of every group and runs the video
// jobs.
type Service struct {
	o Options
	// budget is o.MaxCostPerDay, which a reload of the config may change
	// (SetMaxCostPerDay).
	budget atomic.Int64
	// jobWake wakes RunVideoJobs when a job is submitted.
	jobWake wake.Signal
}

// New returns the service; it does no I/O.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Service{o: o, jobWake: wake.New()}
	s.budget.Store(o.MaxCostPerDay)
	return s
}

// SetMaxCostPerDay changes Options.MaxCostPerDay (agent.max_cost_per_day
// read again) for what is asked from now on.
func (s *Service) SetMaxCostPerDay(microcents int64) { s.budget.Store(microcents) }

var sizeRe = regexp.MustCompile(`^(auto|[1-9][0-9]{2,3}x[1-9][0-9]{2,3})$`)

// maxPrompt bounds a prompt; providers take a few thousand characters.
const maxPrompt = 4000

// GenerateImage is generate_image: an image from a prompt, or an edit of
// the image of SourceRef (fetched through the usual authorised path).
func (s *Service) GenerateImage(ctx context.Context, g *groups.Group, a tools.GenerateImageArgs) (*tools.GeneratedResult, *tools.Error) {
	gen := &s.o
	if gen.Imager == nil {
		return nil, tools.Errorf(tools.CodeBadRequest, "image generation is not configured: set media.generation.image: {provider, model}")
	}
	if herr := checkPrompt(a.Prompt); herr != nil {
		return nil, herr
	}
	if a.Size != "" && !sizeRe.MatchString(a.Size) {
		return nil, tools.Errorf(tools.CodeBadRequest, "size %q is not WIDTHxHEIGHT (e.g. 1024x1024, 1536x1024) or auto", textclip.OneLine(a.Size, 40))
	}
	if herr := s.overBudget(ctx, g); herr != nil {
		return nil, herr
	}
	req := generate.ImageRequest{Prompt: a.Prompt, Size: a.Size}
	if a.SourceRef != "" {
		src, done, herr := s.source(ctx, g, a.SourceRef)
		if herr != nil {
			return nil, herr
		}
		defer done()
		req.Source = src
	}
	progress.Report(ctx, progress.Progress{State: progress.Working})
	start := gen.now()
	img, err := gen.Imager.Image(ctx, req)
	rec := store.Generation{Folder: g.Folder, At: start, Kind: "image", Provider: gen.ImageModel.Provider, Model: gen.ImageModel.Name}
	if err != nil {
		return nil, s.generationFailed(ctx, rec, "image", err)
	}
	rec.Units, rec.Input, rec.Output = 1, img.Usage.InputTokens, img.Usage.OutputTokens
	media.Price(&rec, gen.ImageModel.Price, generate.Usage{InputTokens: img.Usage.InputTokens, OutputTokens: img.Usage.OutputTokens})
	name := "generated"
	if a.SourceRef != "" {
		name = "edited"
	}
	res, herr := s.keep(ctx, g, made{kind: mediaregistry.Image, want: "image/", declared: img.MIME, name: name,
		caption: a.Prompt, r: strings.NewReader(string(img.Data)), send: a.Send, sendCaption: a.Caption}, &rec)
	if herr != nil {
		return nil, herr
	}
	res.Note, res.Model = img.Note, gen.ImageModel.Name
	return res, nil
}

// source fetches the image to edit through Fetch (authorised for g,
// downloaded unless cached, placed in its folder) and opens the group's
// copy. done closes it.
func (s *Service) source(ctx context.Context, g *groups.Group, ref string) (*generate.Source, func(), *tools.Error) {
	if !s.o.Imager.CanEdit() {
		return nil, nil, tools.Errorf(tools.CodeBadRequest, "the configured image model cannot edit images")
	}
	res, herr := s.o.Media.Fetch(ctx, g, ref)
	if herr != nil {
		return nil, nil, herr
	}
	switch res.MIME {
	case "image/png", "image/jpeg", "image/webp":
	default:
		return nil, nil, tools.Errorf(tools.CodeBadRequest, "%s is %s; only PNG, JPEG and WebP images can be edited", res.Ref, res.MIME)
	}
	// Fetch handed the copy over (diskbudget.HandOff): no sweep takes it
	// before it is opened here. The error names no path; the log does.
	f, _, err := media.Workspace(s.o.GroupsDir, g).Open(res.Path)
	if err != nil {
		s.o.Log.Warn("generate_image: the fetched copy cannot be opened", "ref", res.Ref, "path", res.Path, "err", err)
		return nil, nil, tools.Errorf(tools.CodeInternal, "the fetched copy of %s cannot be opened", res.Ref)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		s.o.Log.Warn("generate_image: the fetched copy cannot be read", "ref", res.Ref, "path", res.Path, "err", err)
		return nil, nil, tools.Errorf(tools.CodeInternal, "the fetched copy of %s cannot be read", res.Ref)
	}
	return &generate.Source{File: f, Size: fi.Size(), MIME: res.MIME, Name: res.Name}, func() { f.Close() }, nil
}

// Speak is speak: text spoken by the speech model, kept as a voice note
// of its own and, with Send, sent to the chat as one.
func (s *Service) Speak(ctx context.Context, g *groups.Group, a tools.SpeakArgs) (*tools.GeneratedResult, *tools.Error) {
	gen := &s.o
	if gen.Speaker == nil {
		return nil, tools.Errorf(tools.CodeBadRequest, "speech is not configured: set media.generation.speech: {provider, model}")
	}
	text := strings.TrimSpace(a.Text)
	if text == "" {
		return nil, tools.Errorf(tools.CodeBadRequest, "text is required: the words to speak")
	}
	if n := utf8.RuneCountInString(text); n > generate.MaxSpeechChars {
		return nil, tools.Errorf(tools.CodeBadRequest, "text is %d characters; speech takes at most %d", n, generate.MaxSpeechChars)
	}
	voice := a.Voice
	if voice == "" {
		voice = gen.Voice
	}
	if len(voice) > 64 || strings.ContainsAny(voice, "\n\r\t\"") {
		return nil, tools.Errorf(tools.CodeBadRequest, "voice %q is not a voice name (e.g. alloy, nova, coral)", textclip.OneLine(voice, 40))
	}
	if herr := s.overBudget(ctx, g); herr != nil {
		return nil, herr
	}
	progress.Report(ctx, progress.Progress{State: progress.Working})
	start := gen.now()
	sp, err := gen.Speaker.Speak(ctx, generate.SpeechRequest{Text: text, Voice: voice})
	rec := store.Generation{Folder: g.Folder, At: start, Kind: "speech", Provider: gen.SpeechModel.Provider, Model: gen.SpeechModel.Name}
	if err != nil {
		return nil, s.generationFailed(ctx, rec, "voice note", err)
	}
	defer sp.Body.Close()
	m := made{kind: mediaregistry.Voice, want: "audio/", declared: sp.MIME, name: "voice", r: sp.Body, send: a.Send,
		voice: true, caption: text, measure: func(e mediaregistry.Entry, f *os.File) time.Duration {
			return oggDuration(f, e.Size)
		}}
	res, herr := s.keep(ctx, g, m, &rec)
	if herr != nil {
		return nil, herr
	}
	res.Model = gen.SpeechModel.Name
	return res, nil
}

// made is what a generation produced, to keep.
type made struct {
	kind     mediaregistry.Kind
	want     string // the MIME prefix the bytes must sniff as
	declared string
	name     string
	caption  string // what it shows (the prompt, the words), for the ref
	r        io.Reader
	send     bool
	voice    bool
	// sendCaption goes with the file to the chat.
	sendCaption string
	// measure reads the duration from the stored bytes (audio).
	measure func(mediaregistry.Entry, *os.File) time.Duration
	// duration is known beforehand (video).
	duration time.Duration
	// retried: a failure is tried again later (video jobs), so keep does
	// not bill it; the caller bills the final outcome.
	retried bool
}

// keep keeps generated bytes exactly like downloaded ones
// (media.Service.Keep) and, when asked, sends them. rec is completed and
// recorded.
func (s *Service) keep(ctx context.Context, g *groups.Group, m made, rec *store.Generation) (_ *tools.GeneratedResult, herr *tools.Error) {
	// The provider has made (and billed) it whatever happens here: a
	// failure to keep it is recorded with its cost, so the budget holds.
	recorded := false
	defer func() {
		if herr != nil && !recorded && !m.retried {
			s.record(ctx, rec, "failed", herr.Message)
		}
	}()
	id, err := mediaregistry.NewID(mediaregistry.Generated)
	if err != nil {
		return nil, tools.Errorf(tools.CodeInternal, "no ref for the made %s: %v", m.name, err)
	}
	rec.Ref = id
	if m.kind == mediaregistry.Voice {
		// Billed at an estimate of 15 characters a second until the
		// stored audio tells its length.
		rec.Units = float64(utf8.RuneCountInString(m.caption)) / 15
		media.Price(rec, s.o.SpeechModel.Price, generate.Usage{})
	}
	ref, e, rel, herr := s.o.Media.Keep(ctx, g, media.Made{ID: id, Kind: m.kind, Want: m.want, Declared: m.declared, Name: m.name,
		Caption: m.caption, Sender: s.o.AssistantName, Duration: m.duration, Measure: m.measure}, m.r)
	if herr != nil {
		return nil, herr
	}
	if m.kind == mediaregistry.Voice && ref.Duration > 0 {
		rec.Units = ref.Duration.Seconds()
		media.Price(rec, s.o.SpeechModel.Price, generate.Usage{})
	}
	res := &tools.GeneratedResult{Ref: id, Kind: string(m.kind), MIME: e.MIME, Size: e.Size, SHA256: e.SHA256, Path: rel,
		Placeholder: mediaregistry.Render(&ref)}
	if ref.Duration > 0 {
		res.Duration = mediaregistry.FormatDuration(ref.Duration)
	}
	if rec.CostKnown {
		res.Cost = fmt.Sprintf("$%.4f", float64(rec.CostMicrocents)/1e8)
	}
	// Made and kept: what follows is delivery, not generation.
	s.record(ctx, rec, "succeeded", "")
	recorded = true
	if !m.send {
		return res, nil
	}
	d, chat, serr := s.o.Sending.SendFile(ctx, g, rel, m.sendCaption, m.voice)
	if serr != nil {
		return nil, tools.Errorf(serr.Code, "%s (it was made and saved as %s, ref %s)", serr.Message, rel, id)
	}
	res.Chat, res.MessageIDs = chat, d.MessageIDs
	s.remember(ctx, g, chat, d, res.Placeholder)
	return res, nil
}

// remember writes what botd sent into the chat's history as its own
// message: the placeholder, so later runs see the ref like any other.
func (s *Service) remember(ctx context.Context, g *groups.Group, chat string, d channels.Delivery, placeholder string) {
	gen := &s.o
	if gen.Ledger == nil || len(d.MessageIDs) == 0 {
		return
	}
	_, err := gen.Ledger.PutMessage(context.WithoutCancel(ctx), store.Message{ChatID: chat, ID: d.MessageIDs[0],
		SenderName: gen.AssistantName, Text: placeholder, Time: gen.now(), FromMe: true})
	if err != nil {
		s.o.Log.Warn("generated media: not recorded in the chat's history", "group", g.Folder, "err", err)
	}
}

// record writes rec with its outcome on the bill (Bill, else Ledger).
func (s *Service) record(ctx context.Context, rec *store.Generation, outcome, errText string) {
	var bill media.Bill = s.o.Bill
	if s.o.Bill == nil && s.o.Ledger != nil {
		bill = s.o.Ledger
	}
	media.Record(ctx, bill, s.o.Log, rec, outcome, errText)
}

// generationFailed records a failed provider call and answers it: a
// refusal as a sentence for the chat, anything else with what to do.
func (s *Service) generationFailed(ctx context.Context, rec store.Generation, what string, err error) *tools.Error {
	if sentence, ok := generate.Refusal(err); ok {
		s.record(ctx, &rec, "refused", err.Error())
		s.o.Log.Info("generation refused by the provider", "group", rec.Folder, "kind", rec.Kind, "model", rec.Model)
		return tools.Errorf(tools.CodeRefused, "%s", sentence)
	}
	s.record(ctx, &rec, "failed", err.Error())
	s.o.Log.Warn("generation failed", "group", rec.Folder, "kind", rec.Kind, "model", rec.Model, "err", err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return tools.Errorf(tools.CodeDownloadFailed, "making the %s was cut short: %v", what, err)
	}
	msg := err.Error()
	var le *llm.Error
	if errors.As(err, &le) {
		msg = le.Message
		if le.Retryable {
			msg += " (this may pass: try again in a minute)"
		}
	}
	return tools.Errorf(tools.CodeDownloadFailed, "making the %s failed: %s", what, msg)
}

// overBudget refuses generation once the group's model calls and media
// today cost agent.max_cost_per_day.
func (s *Service) overBudget(ctx context.Context, g *groups.Group) *tools.Error {
	gen := &s.o
	limit := s.budget.Load()
	if limit <= 0 || gen.Ledger == nil {
		return nil
	}
	loc := gen.Location
	if loc == nil {
		loc = time.Local
	}
	now := gen.now().In(loc)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	spent, err := gen.Ledger.SpentSince(ctx, g.Folder, day)
	if err != nil {
		s.o.Log.Error("generation: reading today's spending", "group", g.Folder, "err", err)
		return tools.Errorf(tools.CodeInternal, "today's spending could not be read, so nothing is made")
	}
	// Videos under way are billed when they are done: count them now, so
	// a group cannot start more than its budget pays for.
	if live, err := gen.Ledger.MediaJobs(ctx, g.Folder, store.JobSubmitted); err == nil {
		for _, j := range live {
			spent += gen.VideoModel.Price.Cost(float64(j.Seconds), generate.Usage{})
		}
	}
	if spent >= limit {
		return tools.Errorf(tools.CodeOverBudget, "this group has spent today's budget ($%.2f of agent.max_cost_per_day $%.2f), so no more images, voice notes or videos are made until tomorrow",
			float64(spent)/1e8, float64(limit)/1e8)
	}
	return nil
}

func checkPrompt(p string) *tools.Error {
	switch n := utf8.RuneCountInString(p); {
	case strings.TrimSpace(p) == "":
		return tools.Errorf(tools.CodeBadRequest, "prompt is required: describe what to make")
	case n > maxPrompt:
		return tools.Errorf(tools.CodeBadRequest, "prompt is %d characters; at most %d", n, maxPrompt)
	}
	return nil
}
