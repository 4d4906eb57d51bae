package generation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/textclip"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/generate"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// A video takes minutes, longer than any tool call: generate_video
// submits the job, persists it and answers at once; RunVideoJobs polls
// every job with backoff up to its deadline, and when one is done stores
// the video like a download (cache, ref, group copy) and sends it to the
// chat. The job lives in SQLite, so a restart resumes it: the runner polls
// every unfinished job as soon as it starts. A job goes submitted →
// sending → done; one found in sending at a start may have reached the
// chat and is not sent again.

// Defaults of the poll backoff.
const (
	defaultPollMin = 5 * time.Second
	defaultPollMax = time.Minute
)

func (g *Options) backoff(polls int) time.Duration {
	lo, hi := g.PollMin, g.PollMax
	if lo <= 0 {
		lo = defaultPollMin
	}
	if hi < lo {
		hi = max(defaultPollMax, lo)
	}
	return backoff.Schedule{Initial: lo, Factor: 1.5, Max: hi}.Wait(polls)
}

// allowedSeconds are the clip lengths OpenAI's video models take.
var allowedSeconds = map[int]bool{0: true, 4: true, 8: true, 12: true}

// GenerateVideo is generate_video: it submits the job and persists it.
func (s *Service) GenerateVideo(ctx context.Context, g *groups.Group, a tools.GenerateVideoArgs) (*tools.VideoJobResult, *tools.Error) {
	gen := &s.o
	if gen.Videos == nil || gen.Ledger == nil {
		return nil, tools.Errorf(tools.CodeBadRequest, "video generation is not configured: set media.generation.video: {provider, model}")
	}
	if herr := checkPrompt(a.Prompt); herr != nil {
		return nil, herr
	}
	if !allowedSeconds[a.Seconds] {
		return nil, tools.Errorf(tools.CodeBadRequest, "seconds must be 4, 8 or 12")
	}
	if a.Size != "" && !sizeRe.MatchString(a.Size) {
		return nil, tools.Errorf(tools.CodeBadRequest, "size %q is not WIDTHxHEIGHT (e.g. 1280x720, 720x1280)", textclip.OneLine(a.Size, 40))
	}
	if herr := s.overBudget(ctx, g); herr != nil {
		return nil, herr
	}
	live, err := gen.Ledger.MediaJobs(ctx, g.Folder, store.JobSubmitted, store.JobSending)
	if err != nil {
		return nil, tools.Errorf(tools.CodeInternal, "the group's video jobs cannot be read")
	}
	if limit := max(gen.VideoJobsPerGroup, 1); len(live) >= limit {
		return nil, tools.Errorf(tools.CodeBadRequest, "this group already has %d video job(s) under way (media.generation.video.max_jobs_per_group "+
			"is %d); wait for one to finish or cancel_video one", len(live), limit)
	}
	now := gen.now()
	rec := store.Generation{Folder: g.Folder, At: now, Kind: "video", Provider: gen.VideoModel.Provider, Model: gen.VideoModel.Name}
	job, err := gen.Videos.Submit(ctx, generate.VideoRequest{Prompt: a.Prompt, Seconds: a.Seconds, Size: a.Size})
	if err != nil {
		return nil, s.generationFailed(ctx, rec, "video", err)
	}
	timeout := gen.VideoTimeout
	if timeout <= 0 {
		timeout = DefaultConfig().Video.Timeout.D()
	}
	seconds := a.Seconds
	if seconds == 0 {
		seconds = job.Seconds
	}
	j := store.MediaJob{Folder: g.Folder, ChatID: g.Chat, Provider: gen.VideoModel.Provider, Model: gen.VideoModel.Name,
		RemoteID: job.ID, Prompt: a.Prompt, Seconds: seconds, Progress: job.Progress,
		NextPoll: now.Add(gen.backoff(0)), Deadline: now.Add(timeout), Created: now}
	id, err := gen.Ledger.AddMediaJob(context.WithoutCancel(ctx), j)
	if err != nil {
		// The provider has a job nobody will poll: cancel it rather than
		// pay for a video that is never delivered.
		s.o.Log.Error("video job not persisted; cancelling it at the provider", "group", g.Folder, "remote", job.ID, "err", err)
		gen.Videos.Cancel(context.WithoutCancel(ctx), job.ID)
		return nil, tools.Errorf(tools.CodeInternal, "the video job could not be saved, so it was cancelled")
	}
	s.o.Log.Info("video job submitted", "group", g.Folder, "job", id, "remote", job.ID, "model", gen.VideoModel.Name)
	s.wake()
	return &tools.VideoJobResult{ID: id, State: string(job.State), Model: gen.VideoModel.Name, Seconds: seconds,
		Deadline: j.Deadline.In(locOf(gen)).Format(time.RFC3339),
		Note:     "The video is being made; it is sent to the chat by itself when ready (usually a few minutes). Do not send it again."}, nil
}

// CancelVideo is cancel_video: a job of the asking group stops and is
// deleted at the provider.
func (s *Service) CancelVideo(ctx context.Context, g *groups.Group, a tools.CancelVideoArgs) (*tools.VideoJobResult, *tools.Error) {
	gen := &s.o
	if gen.Videos == nil || gen.Ledger == nil {
		return nil, tools.Errorf(tools.CodeBadRequest, "video generation is not configured")
	}
	j, err := gen.Ledger.MediaJob(ctx, g.Folder, a.ID)
	if errors.Is(err, store.ErrNoJob) {
		return nil, tools.Errorf(tools.CodeNotFound, "no video job %d in this group", a.ID)
	}
	if err != nil {
		return nil, tools.Errorf(tools.CodeInternal, "video job %d cannot be read", a.ID)
	}
	res := &tools.VideoJobResult{ID: j.ID, Model: j.Model, Seconds: j.Seconds, Deadline: j.Deadline.In(locOf(gen)).Format(time.RFC3339)}
	if j.State != store.JobSubmitted {
		res.State = j.State
		res.Note = "The job had already ended; nothing changed."
		return res, nil
	}
	j.State, j.Error = store.JobCancelled, "cancelled by request"
	ok, err := gen.Ledger.UpdateMediaJob(ctx, store.JobSubmitted, j)
	if err != nil {
		return nil, tools.Errorf(tools.CodeInternal, "video job %d could not be cancelled", a.ID)
	}
	if !ok {
		cur, _ := gen.Ledger.MediaJob(ctx, g.Folder, a.ID)
		res.State, res.Note = cur.State, "The job ended before it could be cancelled."
		return res, nil
	}
	if err := gen.Videos.Cancel(ctx, j.RemoteID); err != nil && !errors.Is(err, generate.ErrNotFound) {
		s.o.Log.Warn("video job cancelled here, but the provider did not confirm", "job", j.ID, "remote", j.RemoteID, "err", err)
	}
	s.o.Log.Info("video job cancelled", "group", g.Folder, "job", j.ID)
	res.State, res.Note = store.JobCancelled, "Cancelled; nothing will be sent."
	return res, nil
}

// What list_videos shows: the jobs of the last week, a page of them.
const (
	listVideosDays  = 7
	listVideosLimit = 20
	listPromptChars = 120
	listErrorChars  = 300
)

// ListVideos is list_videos: the asking group's video jobs of the last
// week, newest first. A group sees only its own.
func (s *Service) ListVideos(ctx context.Context, g *groups.Group, _ tools.ListVideosArgs) (*tools.ListVideosResult, *tools.Error) {
	gen := &s.o
	if gen.Ledger == nil {
		return nil, tools.Errorf(tools.CodeBadRequest, "video generation is not configured")
	}
	since := gen.now().Add(-listVideosDays * 24 * time.Hour)
	jobs, err := gen.Ledger.RecentMediaJobs(ctx, g.Folder, since, listVideosLimit)
	if err != nil {
		s.o.Log.Error("list_videos: reading jobs", "group", g.Folder, "err", err)
		return nil, tools.Errorf(tools.CodeInternal, "the group's video jobs cannot be read")
	}
	loc := locOf(gen)
	res := &tools.ListVideosResult{Jobs: make([]tools.VideoJobInfo, 0, len(jobs)), Days: listVideosDays}
	for _, j := range jobs {
		info := tools.VideoJobInfo{ID: j.ID, State: j.State, Prompt: textclip.OneLine(j.Prompt, listPromptChars), Seconds: j.Seconds,
			Progress: j.Progress, Asked: j.Created.In(loc).Format("2006-01-02 15:04"), Ref: j.Ref}
		switch j.State {
		case store.JobDone:
			info.Sent = j.Error == ""
			info.Error = textclip.OneLine(j.Error, listErrorChars)
		case store.JobFailed, store.JobCancelled:
			info.Error = textclip.OneLine(j.Error, listErrorChars)
		}
		res.Jobs = append(res.Jobs, info)
	}
	return res, nil
}

func locOf(g *Options) *time.Location {
	if g.Location != nil {
		return g.Location
	}
	return time.Local
}

// wake tells the runner a job was added.
func (s *Service) wake() { s.jobWake.Wake() }

// RunVideoJobs polls video jobs until ctx ends. At its start it settles
// jobs a stop caught while sending and polls every other one at once: the
// provider went on while botd was down.
func (s *Service) RunVideoJobs(ctx context.Context) {
	gen := &s.o
	if gen.Videos == nil || gen.Ledger == nil {
		return
	}
	s.RecoverVideoJobs(ctx)
	first := true
	for {
		next := s.PollVideoJobs(ctx, first)
		first = false
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(gen.now()), 0)
		}
		if !clock.Wait(ctx, clock.Real{}, wait, s.jobWake.C()) {
			return
		}
	}
}

// RecoverVideoJobs ends jobs a stop caught between sending and done: the
// video may have reached the chat, so it is never sent twice. RunVideoJobs
// calls it first.
func (s *Service) RecoverVideoJobs(ctx context.Context) {
	gen := &s.o
	jobs, err := gen.Ledger.MediaJobs(ctx, "", store.JobSending)
	if err != nil {
		s.o.Log.Error("video jobs: reading jobs to recover", "err", err)
		return
	}
	for _, j := range jobs {
		j.State, j.Error = store.JobFailed, "botd stopped while sending the video; it may have reached the chat"
		if _, err := gen.Ledger.UpdateMediaJob(ctx, store.JobSending, j); err != nil {
			s.o.Log.Error("video jobs: recovering", "job", j.ID, "err", err)
			continue
		}
		s.o.Log.Warn("video job was being sent when botd stopped; not sending it again", "group", j.Folder, "job", j.ID, "ref", j.Ref)
	}
}

// PollVideoJobs polls the jobs that are due (all of them when all is
// set) once and returns when the next one is due (zero: none left).
func (s *Service) PollVideoJobs(ctx context.Context, all bool) time.Time {
	gen := &s.o
	jobs, err := gen.Ledger.MediaJobs(ctx, "", store.JobSubmitted)
	if err != nil {
		s.o.Log.Error("video jobs: reading", "err", err)
		return gen.now().Add(gen.backoff(0))
	}
	var next time.Time
	for _, j := range jobs {
		if ctx.Err() != nil {
			return next
		}
		if all || !j.NextPoll.After(gen.now()) {
			j = s.poll(ctx, j)
		}
		if j.State == store.JobSubmitted && (next.IsZero() || j.NextPoll.Before(next)) {
			next = j.NextPoll
		}
	}
	return next
}

// poll asks the provider about one job and acts on the answer; it returns
// the job as it now is.
func (s *Service) poll(ctx context.Context, j store.MediaJob) store.MediaJob {
	gen := &s.o
	g, ok := s.o.Groups.ByFolder(j.Folder)
	if !ok {
		return s.endJob(ctx, j, nil, "the group %s is no longer configured", j.Folder)
	}
	now := gen.now()
	if !now.Before(j.Deadline) {
		if err := gen.Videos.Cancel(ctx, j.RemoteID); err != nil && !errors.Is(err, generate.ErrNotFound) {
			s.o.Log.Warn("video job past its deadline; the provider did not confirm the cancel", "job", j.ID, "err", err)
		}
		return s.endJob(ctx, j, g, "The video (job %d) was not ready after %s, so it was cancelled.",
			j.ID, j.Deadline.Sub(j.Created).Round(time.Minute))
	}
	st, err := gen.Videos.Status(ctx, j.RemoteID)
	switch {
	case errors.Is(err, generate.ErrNotFound):
		return s.endJob(ctx, j, g, "The video (job %d) could not be made: the provider no longer has the job.", j.ID)
	case err != nil:
		if ctx.Err() != nil {
			return j
		}
		s.o.Log.Warn("video job: polling failed; trying again later", "job", j.ID, "err", err)
		return s.later(ctx, j, j.Progress)
	}
	switch st.State {
	case generate.JobCompleted:
		return s.deliver(ctx, j, g, st)
	case generate.JobFailed:
		rec := store.Generation{Folder: j.Folder, At: now, Kind: "video", Provider: j.Provider, Model: j.Model}
		if sentence, refused := generate.Refusal(st.Err); refused {
			s.record(ctx, &rec, "refused", st.Err.Error())
			return s.endJob(ctx, j, g, "The video (job %d) was not made: %s", j.ID, sentence)
		}
		s.record(ctx, &rec, "failed", failMessage(st.Err))
		return s.endJob(ctx, j, g, "The video (job %d) could not be made: %s.", j.ID, trimDot(textclip.OneLine(failMessage(st.Err), 300)))
	}
	return s.later(ctx, j, st.Progress)
}

// later schedules the next poll with backoff.
func (s *Service) later(ctx context.Context, j store.MediaJob, progress int) store.MediaJob {
	gen := &s.o
	j.Polls++
	j.Progress = progress
	j.NextPoll = gen.now().Add(gen.backoff(j.Polls))
	if _, err := gen.Ledger.UpdateMediaJob(ctx, store.JobSubmitted, j); err != nil {
		s.o.Log.Warn("video job: saving its next poll", "job", j.ID, "err", err)
	}
	return j
}

// deliver downloads a finished video into the cache (capped, sniffed),
// registers and places it, and sends it once.
func (s *Service) deliver(ctx context.Context, j store.MediaJob, g *groups.Group, st generate.Job) store.MediaJob {
	gen := &s.o
	body, err := gen.Videos.Content(ctx, j.RemoteID)
	if err != nil {
		if errors.Is(err, generate.ErrNotFound) {
			return s.endJob(ctx, j, g, "The video (job %d) was made, but the provider no longer has it.", j.ID)
		}
		s.o.Log.Warn("video job: download failed; trying again later", "job", j.ID, "err", err)
		return s.later(ctx, j, 100)
	}
	defer body.Close()
	seconds := j.Seconds
	if st.Seconds > 0 {
		seconds = st.Seconds
	}
	rec := store.Generation{Folder: j.Folder, At: gen.now(), Kind: "video", Provider: j.Provider, Model: j.Model, Units: float64(seconds)}
	media.Price(&rec, gen.VideoModel.Price, generate.Usage{})
	res, herr := s.keep(ctx, g, made{kind: mediaregistry.Video, want: "video/", declared: "video/mp4", name: "video",
		caption: j.Prompt, r: body, duration: time.Duration(seconds) * time.Second, retried: true}, &rec)
	if herr != nil {
		if herr.Code == tools.CodeTooLarge {
			s.record(ctx, &rec, "failed", herr.Message)
			return s.endJob(ctx, j, g, "The video (job %d) was made but is too large to keep: %s.", j.ID, trimDot(herr.Message))
		}
		s.o.Log.Warn("video job: keeping the video failed; trying again later", "job", j.ID, "err", herr)
		return s.later(ctx, j, 100)
	}
	j.State, j.Ref, j.Progress = store.JobSending, res.Ref, 100
	if ok, err := gen.Ledger.UpdateMediaJob(context.WithoutCancel(ctx), store.JobSubmitted, j); err != nil || !ok {
		// Cancelled meanwhile (or the state cannot be written, which
		// must not lead to a second send): kept, not sent.
		s.o.Log.Info("video job: made but not sent (cancelled meanwhile, or its state could not be saved)", "job", j.ID, "ref", res.Ref, "err", err)
		return j
	}
	caption := "Video: " + textclip.OneLine(j.Prompt, 200)
	d, chat, sherr := s.o.Sending.SendFile(context.WithoutCancel(ctx), g, res.Path, caption, false)
	j.State = store.JobDone
	if sherr != nil {
		j.Error = sherr.Message
		s.o.Log.Warn("video job: sending failed", "job", j.ID, "ref", res.Ref, "err", sherr)
	} else {
		s.remember(ctx, g, chat, d, res.Placeholder)
		s.o.Log.Info("video job delivered", "group", j.Folder, "job", j.ID, "ref", res.Ref, "bytes", res.Size)
	}
	if _, err := gen.Ledger.UpdateMediaJob(context.WithoutCancel(ctx), store.JobSending, j); err != nil {
		s.o.Log.Error("video job: delivered but not marked done", "job", j.ID, "err", err)
	}
	// Its copy at the provider is no longer needed.
	if err := gen.Videos.Cancel(context.WithoutCancel(ctx), j.RemoteID); err != nil && !errors.Is(err, generate.ErrNotFound) {
		s.o.Log.Debug("video job: deleting the provider's copy failed", "job", j.ID, "err", err)
	}
	return j
}

// endJob fails a job and tells its chat why, in one sentence.
func (s *Service) endJob(ctx context.Context, j store.MediaJob, g *groups.Group, format string, args ...any) store.MediaJob {
	gen := &s.o
	msg := fmt.Sprintf(format, args...)
	j.State, j.Error = store.JobFailed, msg
	ok, err := gen.Ledger.UpdateMediaJob(context.WithoutCancel(ctx), store.JobSubmitted, j)
	if err != nil || !ok {
		return j
	}
	s.o.Log.Info("video job ended", "group", j.Folder, "job", j.ID, "why", msg)
	if g == nil {
		return j
	}
	if err := s.o.Sending.Tell(context.WithoutCancel(ctx), g, msg); err != nil {
		s.o.Log.Warn("video job: could not tell the chat", "job", j.ID, "err", err)
	}
	return j
}

// failMessage is the provider's reason without its plumbing.
func failMessage(err error) string {
	var le *llm.Error
	switch {
	case err == nil:
		return "the provider gave no reason"
	case errors.As(err, &le) && le.Message != "":
		return le.Message
	}
	return err.Error()
}

func trimDot(s string) string { return strings.TrimRight(s, ". ") }
