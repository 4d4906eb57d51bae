// Package media is the one home of a fetch: authorise the ref for the
// asking group (the registry's scoped get), share one download among
// concurrent fetches, download through the channel into the cache (the
// size cap enforced there, while streaming), and place the group's own
// copy in its folder. It answers fetch_media and list_media, and keeps
// what botd makes like a download (Keep). The other media tools have
// services of their own: media/links (fetch_url, web_search),
// media/generation (images, speech, video jobs) and media/sending; the
// IPC host and the built-in agent reach all of them through
// media/mediahost, and none knows channels, the registry or the cache.
package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/botd-dev/botd/internal/progress"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/ffmpeg"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/media/generate"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/transcribe"
)

// Options wire a Service.
type Options struct {
	Registry *mediaregistry.Registry
	Cache    *mediaregistry.Cache
	// Channels by name ("telegram", ...). Downloads need channels.Downloader or
	// channels.FileDownloader.
	Channels  map[string]channels.Channel
	Groups    *groups.Set
	GroupsDir string
	// MaxDownloadBytes caps one download; a channel's DownloadLimit can
	// only lower it. It, DownloadTimeout, DownloadIdleTimeout and
	// DownloadsPerGroup take DefaultConfig's value when zero.
	MaxDownloadBytes int64
	// DownloadTimeout bounds one download.
	DownloadTimeout time.Duration
	// DownloadIdleTimeout cuts a download without a byte for this long:
	// networks that are merely slow still move every second.
	DownloadIdleTimeout time.Duration
	// DownloadsPerGroup bounds one group's concurrent downloads; further
	// fetches queue (and say so) while cached media, lists and sends of
	// the group are still served at once.
	DownloadsPerGroup int
	// Budget, when set, learns of every byte stored and keeps files a
	// fetch is using from being evicted.
	Budget *diskbudget.Budget
	// Bill records what transcriptions cost on the group's bill; nil
	// records nothing.
	Bill Bill
	// Transcriber turns voice notes and audio into text; nil means
	// media.transcription is not configured, and fetches say how to.
	Transcriber *transcribe.Transcriber
	// Parse bounds the child that takes a video's sound out (the
	// media.parse settings); zero fields take box's defaults.
	Parse box.Limits
	// Pages brings back the bytes of a link ref (fetch_url) that the
	// cache lost (links.Pages); nil: fetching web pages is off.
	Pages Pages
	// Meter, when set, counts fetches and the bytes downloaded for
	// botd's metrics.
	Meter Meter
	Log   *slog.Logger
}

// Meter counts what the service does: each fetch_media call of a ref of
// network with its result ("cached", "downloaded" or "failed"), and the
// bytes of each download stored.
type Meter interface {
	MediaFetched(network, result string)
	MediaDownloaded(network string, bytes int64)
}

// noMeter counts nothing.
type noMeter struct{}

func (noMeter) MediaFetched(string, string)   {}
func (noMeter) MediaDownloaded(string, int64) {}

// fetchResult is how a fetch_media call ended, for the Meter.
func fetchResult(cached bool, err *tools.Error) string {
	switch {
	case err != nil:
		return "failed"
	case cached:
		return "cached"
	}
	return "downloaded"
}

// Pages downloads a link ref's page again into the cache.
type Pages interface {
	Refetch(ctx context.Context, group string, ref *mediaregistry.MediaReference) (mediaregistry.Entry, *tools.Error)
}

// Service answers fetch_media and list_media of every group.
type Service struct {
	o Options
	// timeouts are o.DownloadTimeout and o.DownloadIdleTimeout, which a
	// reload of the config may change (SetTimeouts); a download takes
	// them when it starts.
	timeouts atomic.Pointer[Timeouts]
	mu       sync.Mutex
	flights  map[string]*flight
	slots    map[string]chan struct{} // download slots by group folder
}

// Timeouts bound one download: Overall is media.download_timeout, Idle
// media.download_idle_timeout.
type Timeouts struct {
	Overall, Idle time.Duration
}

// SetTimeouts puts t in force for the downloads that start from now on
// (one under way keeps its own); a zero field keeps the one in force.
func (s *Service) SetTimeouts(t Timeouts) {
	cur := *s.timeouts.Load()
	if t.Overall <= 0 {
		t.Overall = cur.Overall
	}
	if t.Idle <= 0 {
		t.Idle = cur.Idle
	}
	s.timeouts.Store(&t)
}

// flight is one download that every concurrent fetch of a ref waits on.
type flight struct {
	done  chan struct{}
	meter *meter
	entry mediaregistry.Entry
	err   *tools.Error
}

// New returns the service; it does no I/O.
func New(o Options) *Service {
	def := DefaultConfig()
	if o.MaxDownloadBytes <= 0 {
		o.MaxDownloadBytes = def.MaxDownloadBytes
	}
	if o.DownloadTimeout <= 0 {
		o.DownloadTimeout = def.DownloadTimeout.D()
	}
	if o.DownloadIdleTimeout <= 0 {
		o.DownloadIdleTimeout = def.DownloadIdleTimeout.D()
	}
	if o.DownloadsPerGroup <= 0 {
		o.DownloadsPerGroup = def.DownloadsPerGroup
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Meter == nil {
		o.Meter = noMeter{}
	}
	s := &Service{o: o, flights: map[string]*flight{}, slots: map[string]chan struct{}{}}
	s.timeouts.Store(&Timeouts{Overall: o.DownloadTimeout, Idle: o.DownloadIdleTimeout})
	return s
}

// workspace is the folder of g, where its own copies of media live.
func (s *Service) workspace(g *groups.Group) groups.Workspace {
	return Workspace(s.o.GroupsDir, g)
}

// Workspace is the folder of g under groupsDir.
func Workspace(groupsDir string, g *groups.Group) groups.Workspace {
	return groups.Workspace{Root: filepath.Join(groupsDir, g.Folder)}
}

// expired says how old an expired ref is and why it no longer works.
func (s *Service) expired(ref *mediaregistry.MediaReference) *tools.Error {
	now := s.o.Registry.Now()
	return tools.Errorf(tools.CodeExpired, "media ref %s was shared %s ago and expired %s ago: refs from %s stay fetchable for %s "+
		"(media.ref_ttl), and its bytes are no longer cached; ask the sender to share it again",
		ref.ID, age(now.Sub(ref.Created)), age(now.Sub(ref.Expires)), ref.Channel, age(ref.Expires.Sub(ref.Created)))
}

// age is a duration as people say it: 3h, 2d, 45m.
func age(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	case d >= time.Minute:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}

func refError(id string, err error) *tools.Error {
	switch {
	case errors.Is(err, mediaregistry.ErrNotFound):
		return tools.Errorf(tools.CodeNotFound, "no media with ref %s (check the ref in the placeholder, or call list_media)", id)
	case errors.Is(err, mediaregistry.ErrExpired):
		return tools.Errorf(tools.CodeExpired, "media ref %s has expired; ask the sender to share it again", id)
	}
	return tools.Errorf(tools.CodeInternal, "looking up %s failed", id)
}

// Fetch authorises ref id for g, downloads it unless cached, and places
// the group's copy in its folder.
func (s *Service) Fetch(ctx context.Context, g *groups.Group, id string) (*tools.FetchMediaResult, *tools.Error) {
	id = strings.TrimPrefix(strings.TrimSpace(id), "ref:")
	if id == "" {
		return nil, tools.Errorf(tools.CodeBadRequest, "mediaRef is required (the ref:... id from a placeholder)")
	}
	ref, err := s.o.Registry.Get(ctx, g, id)
	expired := errors.Is(err, mediaregistry.ErrExpired)
	if expired {
		// Bytes still in the cache are served: the network may no longer
		// have them, but botd does.
		if _, ok, cerr := s.o.Cache.Lookup(ctx, ref.ID); cerr == nil && ok {
			err = nil
		} else {
			return nil, s.expired(&ref)
		}
	}
	if err != nil {
		rerr := refError(id, err)
		switch {
		case rerr.Code == tools.CodeInternal:
			s.o.Log.Error("fetch_media: registry", "ref", id, "err", err)
		case errors.Is(err, mediaregistry.ErrForbidden):
			// Answered as unknown; only the operator learns it was a ref
			// of another chat (a confused or probing agent).
			s.o.Log.Warn("fetch_media: ref of another chat answered as not found", "group", g.Folder, "ref", id)
		}
		return nil, rerr
	}
	entry, cached, blob, ferr := s.acquire(ctx, g.Folder, &ref, expired)
	s.o.Meter.MediaFetched(ref.Channel, fetchResult(cached, ferr))
	if ferr != nil {
		return nil, ferr
	}
	defer blob.Close()
	rel, held, err := s.place(g, &ref, entry, blob)
	if err == nil {
		defer held.Close()
		// The caller opens the copy by its path once this answers.
		s.o.Budget.HandOff(g.Folder, rel)
	}
	if err != nil {
		s.o.Log.Error("fetch_media: placing the group's copy", "group", g.Folder, "ref", id, "err", err)
		if errors.Is(err, groups.ErrNotOurs) {
			return nil, tools.Errorf(tools.CodeInternal, "could not save the media into the group folder: %v", err)
		}
		return nil, tools.Errorf(tools.CodeInternal, "could not save the media into the group folder")
	}
	res := &tools.FetchMediaResult{
		Ref: ref.ID, Kind: string(ref.Kind), Name: mediaregistry.SafeName(ref.FileName), MIME: entry.MIME,
		Size: entry.Size, SHA256: entry.SHA256, Path: rel, Width: ref.Width, Height: ref.Height,
		Caption: mediaregistry.SafeCaption(ref.Caption), Sender: mediaregistry.SafeName(ref.Sender), Cached: cached,
	}
	if d := mediaregistry.CleanMIME(ref.MIME); d != "" && d != entry.MIME {
		res.Declared = d
	}
	if ref.Duration > 0 {
		res.Duration = mediaregistry.FormatDuration(ref.Duration)
	}
	switch {
	case spoken(&ref, entry.MIME):
		s.transcribe(ctx, g.Folder, res, blob, entry.Size, entry.MIME)
	case ref.Kind == mediaregistry.Video || ref.Kind == mediaregistry.VideoNote:
		s.transcribeVideo(ctx, g.Folder, res, entry)
	}
	return res, nil
}

// transcribeVideo transcribes a video's sound, taken out with ffmpeg.
func (s *Service) transcribeVideo(ctx context.Context, group string, res *tools.FetchMediaResult, e mediaregistry.Entry) {
	if s.o.Transcriber == nil {
		res.TranscriptNote = "Its sound is not transcribed: " + transcribe.ErrNotConfigured.Error()
		return
	}
	progress.Report(ctx, progress.Progress{State: progress.Working})
	video, err := os.Open(s.o.Cache.Path(e.SHA256))
	if err != nil {
		s.o.Log.Warn("fetch_media: cached video cannot be opened", "ref", res.Ref, "err", err)
		res.TranscriptNote = "Its sound is not transcribed: the video could not be read back."
		return
	}
	sound, err := ffmpeg.AudioTrack(ctx, video, ffmpeg.Options{Limits: s.o.Parse, Log: s.o.Log})
	video.Close()
	switch {
	case errors.Is(err, ffmpeg.ErrNoSound):
		res.TranscriptNote = "The video has no sound."
		return
	case err != nil:
		s.o.Log.Info("fetch_media: no sound taken from the video", "ref", res.Ref, "err", err)
		res.TranscriptNote = "Its sound is not transcribed: " + err.Error()
		return
	}
	defer sound.Close()
	fi, err := sound.Stat()
	if err != nil {
		res.TranscriptNote = "Its sound could not be read back."
		return
	}
	s.transcribe(ctx, group, res, sound, fi.Size(), "audio/ogg")
	if res.Transcript != "" {
		res.TranscriptNote = "What is said in the video. " + res.TranscriptNote
	}
}

// spoken reports media whose words the agent wants rather than its bytes.
func spoken(ref *mediaregistry.MediaReference, mime string) bool {
	return ref.Kind == mediaregistry.Voice || ref.Kind == mediaregistry.Audio || strings.HasPrefix(mime, "audio/")
}

// transcribe adds what was said to res. A failure is a note, not a failed
// fetch: the file is saved either way.
func (s *Service) transcribe(ctx context.Context, group string, res *tools.FetchMediaResult, blob *os.File, size int64, mime string) {
	if s.o.Transcriber == nil {
		res.TranscriptNote = transcribe.ErrNotConfigured.Error()
		return
	}
	progress.Report(ctx, progress.Progress{State: progress.Working})
	t, err := s.o.Transcriber.Transcribe(ctx, blob, size, res.Name, mime)
	s.billTranscript(ctx, group, res.Ref, t, err)
	if err != nil {
		s.o.Log.Warn("fetch_media: transcription failed", "ref", res.Ref, "err", err)
		res.TranscriptNote = "Transcribing it failed: " + err.Error()
		return
	}
	res.Transcript = t.Text
	switch {
	case t.Text == "":
		res.TranscriptNote = "No speech was heard in it."
	case t.Cached:
		res.TranscriptNote = "Transcript by " + t.Model + " (transcribed before)."
	default:
		res.TranscriptNote = "Transcript by " + t.Model + "."
	}
	if t.Language != "" {
		res.TranscriptNote += " Language: " + t.Language + "."
	}
	if t.Duration > 0 && res.Duration == "" {
		res.Duration = mediaregistry.FormatDuration(t.Duration)
	}
}

// billTranscript puts a transcription the provider was asked for on the
// group's bill, beside its model calls: units are seconds of audio heard,
// priced per minute for the models botd knows. A cached transcript (or
// one shared with a concurrent fetch of the same bytes) cost nothing.
func (s *Service) billTranscript(ctx context.Context, group, ref string, t transcribe.Transcript, err error) {
	if err == nil && t.Cached {
		return
	}
	if err != nil && ctx.Err() != nil {
		return // the caller gave up; the provider was not made to answer
	}
	rec := store.Generation{Folder: group, Kind: "transcription", Provider: s.o.Transcriber.Provider(), Model: s.o.Transcriber.Model(),
		Units: t.Duration.Seconds(), Ref: ref}
	if err != nil {
		Record(ctx, s.o.Bill, s.o.Log, &rec, "failed", err.Error())
		return
	}
	if p, ok := generate.PriceOf(rec.Model); ok {
		Price(&rec, p, generate.Usage{})
	}
	Record(ctx, s.o.Bill, s.o.Log, &rec, "succeeded", "")
}

// acquire finds ref's bytes in the cache, downloading them unless cached,
// and holds the blob so no sweep evicts it while the fetch uses it. A blob
// whose local copy is gone is brought back from the object store when one
// keeps it; failing that (or evicted between the lookup and the hold) it
// is downloaded again, unless the ref has expired: then the network may no
// longer have it. A store that cannot be reached never fails a fetch the
// channel can still serve.
func (s *Service) acquire(ctx context.Context, group string, ref *mediaregistry.MediaReference, expired bool) (mediaregistry.Entry, bool, *os.File, *tools.Error) {
	root, err := s.o.Cache.OpenRoot()
	if err != nil {
		s.o.Log.Error("fetch_media: opening the media cache", "err", err)
		return mediaregistry.Entry{}, false, nil, tools.Errorf(tools.CodeInternal, "the media cache cannot be opened")
	}
	defer root.Close()
	for attempt := 0; ; attempt++ {
		entry, cached, ferr := s.cachedOrDownload(ctx, group, ref)
		if ferr != nil {
			return entry, false, nil, ferr
		}
		blob, err := s.o.Budget.Acquire(root, entry.SHA256)
		if errors.Is(err, diskbudget.ErrGone) && cached && s.o.Cache.Remote() {
			if merr := s.o.Cache.Materialise(ctx, entry); merr == nil {
				s.o.Budget.Added(entry.Size)
				blob, err = s.o.Budget.Acquire(root, entry.SHA256)
			} else {
				s.o.Log.Warn("fetch_media: the object store could not give back the bytes; downloading from the channel",
					"ref", ref.ID, "sha256", entry.SHA256, "err", merr)
				// The store lost the object or cannot be reached: forget
				// the ref's bytes so the next attempt asks the channel.
				s.o.Cache.Drop(context.WithoutCancel(ctx), ref.ID)
			}
		}
		if err == nil {
			if !cached {
				// Counted once held, so that the sweep it may wake finds
				// the new blob in use (a fetch joining the same download
				// counts it again: the count is an estimate that only
				// wakes the sweeper, which measures).
				s.o.Budget.Added(entry.Size)
			}
			return entry, cached, blob, nil
		}
		if !errors.Is(err, diskbudget.ErrGone) {
			s.o.Log.Error("fetch_media: opening the cached blob", "ref", ref.ID, "err", err)
			return entry, false, nil, tools.Errorf(tools.CodeInternal, "the cached copy of %s cannot be read", ref.ID)
		}
		if expired {
			return entry, false, nil, s.expired(ref)
		}
		if attempt > 0 {
			// Evicted twice in a row: the budget is smaller than what is
			// in use, and downloading again would only repeat that.
			return entry, false, nil, tools.Errorf(tools.CodeDownloadFailed, "%s was evicted from the media cache as soon as it was "+
				"downloaded: media.max_disk_bytes is too small for what is in use", ref.ID)
		}
		s.o.Log.Info("fetch_media: cached blob gone before use, downloading again", "ref", ref.ID)
	}
}

// cachedOrDownload serves a ref from the cache, or downloads it once even
// when several callers ask at the same time, in one of the group's
// download slots.
func (s *Service) cachedOrDownload(ctx context.Context, group string, ref *mediaregistry.MediaReference) (mediaregistry.Entry, bool, *tools.Error) {
	if e, ok, err := s.o.Cache.Lookup(ctx, ref.ID); err == nil && ok {
		return e, true, nil
	}
	s.mu.Lock()
	f, joined := s.flights[ref.ID]
	if !joined {
		f = &flight{done: make(chan struct{}), meter: newMeter(ref.Size)}
		s.flights[ref.ID] = f
	}
	s.mu.Unlock()
	if !joined {
		// Detached from the first caller: its cancellation must not fail
		// the others waiting on the same download.
		tm := *s.timeouts.Load()
		dctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), tm.Overall, errOverall)
		go func() {
			defer cancel()
			// Whatever happens in the channel, the flight ends and every
			// waiter hears about it; a panic is an error, not a dead daemon.
			defer func() {
				if p := recover(); p != nil {
					s.o.Log.Error("media download panicked", "ref", ref.ID, "channel", ref.Channel, "panic", p)
					f.entry, f.err = mediaregistry.Entry{}, tools.Errorf(tools.CodeDownloadFailed, "downloading %s failed: the %s channel crashed while downloading", ref.ID, ref.Channel)
				}
				s.mu.Lock()
				delete(s.flights, ref.ID)
				s.mu.Unlock()
				close(f.done)
			}()
			release, err := s.slot(dctx, group)
			if err != nil {
				if f.err = s.cutShort(ref, f.meter, dctx, tm); f.err == nil {
					f.err = tools.Errorf(tools.CodeDownloadFailed, "downloading %s failed: %v", ref.ID, err)
				}
				return
			}
			defer release()
			f.meter.state.Store(stateDownloading)
			if ref.Channel == mediaregistry.Link {
				// A page whose bytes the cache lost while its record
				// said they were fresh: fetched again.
				f.err = ErrPagesOff()
				if s.o.Pages != nil {
					f.entry, f.err = s.o.Pages.Refetch(dctx, group, ref)
				}
				return
			}
			f.entry, f.err = s.download(dctx, ref, f.meter, tm)
		}()
	}
	return s.wait(ctx, ref, f)
}

// errOverall is the cause of a download that ran past DownloadTimeout.
var errOverall = errors.New("download took too long")

// wait waits for a flight, telling the caller how it goes.
func (s *Service) wait(ctx context.Context, ref *mediaregistry.MediaReference, f *flight) (mediaregistry.Entry, bool, *tools.Error) {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		reportProgress(ctx, f.meter)
		select {
		case <-f.done:
			return f.entry, false, f.err
		case <-tick.C:
		case <-ctx.Done():
			return mediaregistry.Entry{}, false, tools.Errorf(tools.CodeDownloadFailed, "cancelled while downloading %s", ref.ID)
		}
	}
}

// progressEvery is how often a waiting caller hears how a download goes.
const progressEvery = time.Second

// cutShort explains a download that ctx ended: stalled, or over time
// (tm, the download's timeouts).
func (s *Service) cutShort(ref *mediaregistry.MediaReference, m *meter, ctx context.Context, tm Timeouts) *tools.Error {
	_, done, _ := m.snapshot()
	switch context.Cause(ctx) {
	case errStalled:
		s.o.Log.Warn("media download stalled", "ref", ref.ID, "channel", ref.Channel, "bytes", done, "idle", tm.Idle)
		return tools.Errorf(tools.CodeDownloadFailed, "downloading %s stalled: no data from %s for %s after %s; nothing was kept, try again later",
			ref.ID, ref.Channel, tm.Idle, mediaregistry.FormatSize(done))
	case errOverall:
		s.o.Log.Warn("media download timed out", "ref", ref.ID, "channel", ref.Channel, "bytes", done, "limit", tm.Overall)
		return tools.Errorf(tools.CodeDownloadFailed, "downloading %s took longer than %s (%s arrived); nothing was kept, try again later",
			ref.ID, tm.Overall, mediaregistry.FormatSize(done))
	}
	return nil
}

// limit is the cap of one download of ref on ch, and what to call it.
func (s *Service) limit(ch channels.Channel, ref *mediaregistry.MediaReference) (int64, string) {
	max, why := s.o.MaxDownloadBytes, "the download limit (media.max_download_bytes)"
	if l, ok := ch.(channels.DownloadLimiter); ok {
		if n, w := l.DownloadLimit(ref); n > 0 && n < max {
			max, why = n, w
		}
	}
	return max, why
}

func (s *Service) download(ctx context.Context, ref *mediaregistry.MediaReference, m *meter, tm Timeouts) (mediaregistry.Entry, *tools.Error) {
	if ref.Channel == mediaregistry.Generated {
		// botd made it: no network has the bytes, only the cache had.
		return mediaregistry.Entry{}, tools.Errorf(tools.CodeExpired, "%s was made by botd and its bytes are no longer kept "+
			"(media.cache_ttl or the disk budget removed them); make it again", ref.ID)
	}
	ch, ok := s.o.Channels[ref.Channel]
	if !ok {
		return mediaregistry.Entry{}, tools.Errorf(tools.CodeDownloadFailed, "the %s channel is not running, so %s cannot be downloaded now", ref.Channel, ref.ID)
	}
	max, why := s.limit(ch, ref)
	if ref.Size > max {
		return mediaregistry.Entry{}, tools.Errorf(tools.CodeTooLarge, "%s is %s, over %s of %s", ref.ID,
			mediaregistry.FormatSize(ref.Size), why, mediaregistry.FormatSize(max))
	}
	start := time.Now()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go guardStall(ctx, stop, m, tm.Idle)
	var e mediaregistry.Entry
	var err error
	switch dl := ch.(type) {
	case channels.FileDownloader:
		e, err = s.o.Cache.StoreFile(ctx, ref.ID, mediaregistry.Declared(ref.MIME, ref.FileName), max, func(dst mediaregistry.File) error {
			return dl.DownloadTo(ctx, ref, meteredFile{File: dst, m: m})
		})
	case channels.Downloader:
		var body io.ReadCloser
		body, _, err = dl.Download(ctx, ref)
		if err == nil {
			// A body that ignores ctx still unblocks when closed.
			unhook := context.AfterFunc(ctx, func() { body.Close() })
			e, err = s.o.Cache.Store(ctx, ref.ID, mediaregistry.Declared(ref.MIME, ref.FileName), meteredReader{r: body, m: m}, max)
			unhook()
			body.Close()
		}
	default:
		return mediaregistry.Entry{}, tools.Errorf(tools.CodeDownloadFailed, "the %s channel cannot download media", ref.Channel)
	}
	if err != nil && ctx.Err() != nil {
		if herr := s.cutShort(ref, m, ctx, tm); herr != nil {
			return mediaregistry.Entry{}, herr
		}
	}
	if errors.Is(err, mediaregistry.ErrTooLarge) {
		s.o.Log.Warn("media download over the limit", "ref", ref.ID, "channel", ref.Channel, "limit", max)
		return mediaregistry.Entry{}, tools.Errorf(tools.CodeTooLarge, "%s is larger than %s of %s; stopped at the limit", ref.ID, why, mediaregistry.FormatSize(max))
	}
	if err != nil {
		return mediaregistry.Entry{}, downloadError(ref, err, s.o.Log)
	}
	// The disk budget hears of it once the fetch holds it (acquire); until
	// then no sweep takes the new blob from the fetches waiting for it.
	s.o.Budget.HandOff(CacheArea, e.SHA256)
	s.o.Meter.MediaDownloaded(ref.Channel, e.Size)
	if err := s.o.Registry.Downloaded(ctx, ref.ID, e.Size); err != nil {
		s.o.Log.Warn("media download not counted", "ref", ref.ID, "err", err)
	}
	s.o.Log.Info("media downloaded", "ref", ref.ID, "channel", ref.Channel, "bytes", e.Size, "mime", e.MIME, "took", time.Since(start).Round(time.Millisecond))
	return e, nil
}

// ErrPagesOff answers a web page fetch where fetching pages is off.
func ErrPagesOff() *tools.Error {
	return tools.Errorf(tools.CodeForbidden, "fetching web pages is turned off on this botd (internet.fetch.enabled)")
}

func downloadError(ref *mediaregistry.MediaReference, err error, log *slog.Logger) *tools.Error {
	log.Warn("media download failed", "ref", ref.ID, "channel", ref.Channel, "err", err)
	switch {
	case errors.Is(err, channels.ErrTooLarge):
		return tools.Errorf(tools.CodeTooLarge, "%s is too large for the %s channel to download: %v", ref.ID, ref.Channel, err)
	case errors.Is(err, channels.ErrForbidden):
		return tools.Errorf(tools.CodeForbidden, "downloading %s was refused: %v", ref.ID, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return tools.Errorf(tools.CodeDownloadFailed, "downloading %s failed: the disk is full (no space left for the media cache); nothing was kept, try again once space is freed", ref.ID)
	}
	return tools.Errorf(tools.CodeDownloadFailed, "downloading %s failed: %v", ref.ID, err)
}

// List is list_media: the group's live refs, newest first, metadata only.
func (s *Service) List(ctx context.Context, g *groups.Group, a tools.ListMediaArgs) (*tools.ListMediaResult, *tools.Error) {
	f := mediaregistry.Filter{Limit: a.Limit}
	if a.Limit < 0 || a.Limit > 200 {
		return nil, tools.Errorf(tools.CodeBadRequest, "limit must be between 1 and 200")
	}
	if a.Kind != "" {
		k, ok := mediaregistry.ParseKind(a.Kind)
		if !ok {
			return nil, tools.Errorf(tools.CodeBadRequest, "unknown kind %q (one of image, video, audio, voice, document, sticker, animation, videonote)", a.Kind)
		}
		f.Kind = k
	}
	refs, err := s.o.Registry.List(ctx, g, f)
	if err != nil {
		s.o.Log.Error("list_media", "group", g.Folder, "err", err)
		return nil, tools.Errorf(tools.CodeInternal, "listing media failed")
	}
	out := &tools.ListMediaResult{Items: make([]tools.MediaItem, 0, len(refs))}
	for _, r := range refs {
		it := tools.MediaItem{Ref: r.ID, Kind: string(r.Kind), Name: mediaregistry.SafeName(r.FileName), Size: r.Size,
			MIME: mediaregistry.CleanMIME(r.MIME), Sender: mediaregistry.SafeName(r.Sender), Time: r.Created.UTC(),
			Caption: mediaregistry.SafeCaption(r.Caption), Expires: r.Expires.UTC()}
		if r.Duration > 0 {
			it.Duration = mediaregistry.FormatDuration(r.Duration)
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}
