package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// Generation is one call that made media (or failed to): its units are
// images, or seconds of audio or video, and its cost counts against the
// group's daily budget beside its model calls.
type Generation struct {
	Folder         string
	At             time.Time
	Kind           string // image | speech | video | transcription | search
	Provider       string
	Model          string
	Outcome        string // succeeded | failed | refused
	Units          float64
	Input, Output  int64
	CostMicrocents int64
	CostKnown      bool
	Ref            string
	Error          string
}

// RecordGeneration stores one generation call.
func (s *Store) RecordGeneration(ctx context.Context, g Generation) error {
	if g.At.IsZero() {
		g.At = time.Now()
	}
	_, err := s.DB.ExecContext(ctx, `INSERT INTO media_generations(folder, at, kind, provider, model, outcome, units,
		input_tokens, output_tokens, cost_microcents, cost_known, ref_id, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		g.Folder, g.At.UnixMilli(), g.Kind, g.Provider, g.Model, g.Outcome, g.Units, g.Input, g.Output,
		g.CostMicrocents, g.CostKnown, g.Ref, g.Error)
	if err != nil {
		return fmt.Errorf("record %s generation of %s: %w", g.Kind, g.Folder, err)
	}
	return nil
}

// Job states of a video job. A job is submitted (the provider has it),
// then sending (the video is stored and being sent; a restart found here
// does not send again), then done, failed or cancelled.
const (
	JobSubmitted = "submitted"
	JobSending   = "sending"
	JobDone      = "done"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// MediaJob is a video job as persisted.
type MediaJob struct {
	ID       int64
	Folder   string
	ChatID   string
	Provider string
	Model    string
	RemoteID string
	Prompt   string
	Seconds  int
	State    string
	Progress int
	Polls    int
	NextPoll time.Time
	Deadline time.Time
	Ref      string
	Error    string
	Created  time.Time
	Updated  time.Time
}

// ErrNoJob: no job with that id in that group.
var ErrNoJob = errors.New("no such video job")

// AddMediaJob stores a submitted job and returns its id. Created is when
// it was asked for (now when zero), on the caller's clock like its
// deadline.
func (s *Store) AddMediaJob(ctx context.Context, j MediaJob) (int64, error) {
	if j.State == "" {
		j.State = JobSubmitted
	}
	now := time.Now()
	if j.Created.IsZero() {
		j.Created = now
	}
	var id int64
	err := s.DB.QueryRowContext(ctx, `INSERT INTO media_jobs(folder, chat_id, provider, model, remote_id, prompt, seconds, state,
		progress, next_poll, deadline, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		j.Folder, j.ChatID, j.Provider, j.Model, j.RemoteID, j.Prompt, j.Seconds, j.State, j.Progress,
		j.NextPoll.UnixMilli(), j.Deadline.UnixMilli(), j.Created.UnixMilli(), now.UnixMilli()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("add video job of %s: %w", j.Folder, err)
	}
	return id, nil
}

const jobCols = `id, folder, chat_id, provider, model, remote_id, prompt, seconds, state, progress, polls, next_poll, deadline, ref_id, error, created, updated`

func scanJob(r sqlrows.Scanner) (MediaJob, error) {
	var j MediaJob
	var next, deadline, created, updated int64
	err := r.Scan(&j.ID, &j.Folder, &j.ChatID, &j.Provider, &j.Model, &j.RemoteID, &j.Prompt, &j.Seconds, &j.State,
		&j.Progress, &j.Polls, &next, &deadline, &j.Ref, &j.Error, &created, &updated)
	j.NextPoll, j.Deadline = time.UnixMilli(next), time.UnixMilli(deadline)
	j.Created, j.Updated = time.UnixMilli(created), time.UnixMilli(updated)
	return j, err
}

// MediaJobs lists jobs in the given states (all when none), oldest first;
// folder "" lists every group's.
func (s *Store) MediaJobs(ctx context.Context, folder string, states ...string) ([]MediaJob, error) {
	q := `SELECT ` + jobCols + ` FROM media_jobs WHERE (? = '' OR folder = ?)`
	args := []any{folder, folder}
	if len(states) > 0 {
		q += ` AND state IN (` + placeholders(len(states)) + `)`
		for _, st := range states {
			args = append(args, st)
		}
	}
	return sqlrows.Query(ctx, s.DB, "video jobs", scanJob, q+` ORDER BY id`, args...)
}

// RecentMediaJobs lists folder's jobs created at or after since, newest
// first, at most limit of them.
func (s *Store) RecentMediaJobs(ctx context.Context, folder string, since time.Time, limit int) ([]MediaJob, error) {
	return sqlrows.Query(ctx, s.DB, "recent video jobs of "+folder, scanJob, `SELECT `+jobCols+` FROM media_jobs WHERE folder = ? AND created >= ?
		ORDER BY created DESC, id DESC LIMIT ?`, folder, since.UnixMilli(), limit)
}

// MediaJob fetches one job of folder.
func (s *Store) MediaJob(ctx context.Context, folder string, id int64) (MediaJob, error) {
	j, err := scanJob(s.DB.QueryRowContext(ctx, `SELECT `+jobCols+` FROM media_jobs WHERE id = ? AND folder = ?`, id, folder))
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("video job %d: %w", id, ErrNoJob)
	}
	if err != nil {
		return j, fmt.Errorf("video job %d: %w", id, err)
	}
	return j, nil
}

// UpdateMediaJob writes a job's state, progress, poll count and times.
// It changes only a job still in state from, and reports whether it did:
// a cancel and a poll that race settle on one outcome.
//
// It is fenced (ErrFenced when this instance no longer holds the lease):
// the move to sending is what decides which instance sends the video.
func (s *Store) UpdateMediaJob(ctx context.Context, from string, j MediaJob) (bool, error) {
	var n int64
	err := s.Fenced(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE media_jobs SET state = ?, progress = ?, polls = ?, next_poll = ?, ref_id = ?, error = ?,
			updated = ? WHERE id = ? AND state = ?`, j.State, j.Progress, j.Polls, j.NextPoll.UnixMilli(), j.Ref, j.Error,
			time.Now().UnixMilli(), j.ID, from)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("update video job %d: %w", j.ID, err)
	}
	return n == 1, nil
}

func placeholders(n int) string {
	b := make([]byte, 0, 2*n)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '?')
	}
	return string(b)
}
