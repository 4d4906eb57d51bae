package store

import (
	"context"
	"fmt"
	"time"
)

// PruneAgentHistory deletes what the agent recorded before a time: runs
// with their transcripts, model attempts, notes on fetched refs,
// summaries, image descriptions and answered batches. It reports how many rows went. Messages stay: they are the
// chat, not the agent's bookkeeping.
func (s *Store) PruneAgentHistory(ctx context.Context, before time.Time) (int64, error) {
	cut := before.UnixMilli()
	var total int64
	for _, q := range []string{
		`DELETE FROM agent_runs WHERE started < ?`, // transcripts cascade
		`DELETE FROM llm_attempts WHERE at < ?`,
		`DELETE FROM media_generations WHERE at < ?`,
		`DELETE FROM media_jobs WHERE state IN ('done', 'failed', 'cancelled') AND updated < ?`,
		`DELETE FROM agent_media_notes WHERE created < ?`,
		`DELETE FROM agent_summaries WHERE created < ?`,
		`DELETE FROM media_descriptions WHERE created < ?`,
		`DELETE FROM web_requests WHERE at < ?`,
		`DELETE FROM web_links WHERE fetched < ?`,
		`DELETE FROM llm_batches WHERE state = 'answered' AND updated < ?`,
	} {
		res, err := s.DB.ExecContext(ctx, q, cut)
		if err != nil {
			return total, fmt.Errorf("prune agent history: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}
