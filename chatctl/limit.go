package chatctl

import (
	"context"
	"fmt"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
)

// Admit is access.per_sender_per_hour: it reports whether in may start a
// run. The one past the limit gets one short reply; later ones within
// the hour, none. Owners are not limited. What it counts is kept in the
// database, so a restart resets nothing.
func (c *Commands) Admit(ctx context.Context, in channels.Inbound, g *groups.Group) bool {
	acc := c.Policy.access()
	limit := acc.PerSenderPerHour
	if limit <= 0 || in.SenderID == "" {
		return true
	}
	who := groups.UserID(in.ChatID, in.SenderID)
	if acc.IsOwner(who) {
		return true
	}
	now := c.Policy.now()
	n, err := c.countRuns(ctx, who, now)
	if err != nil {
		c.Log.Error("chatctl: runs per sender not counted; letting the run start", "sender", who, "err", err)
		return true
	}
	if n > limit {
		return false // told already within the hour
	}
	if _, err := c.Policy.DB.ExecContext(ctx, `INSERT INTO sender_runs(sender, at) VALUES (?, ?)`, who, now.UnixMilli()); err != nil {
		c.Log.Error("chatctl: run of a sender not counted", "sender", who, "err", err)
	}
	if n < limit {
		return true
	}
	c.Log.Info("chatctl: a sender reached access.per_sender_per_hour; not running the model", "group", g.Folder, "sender", who, "limit", limit)
	c.reply(ctx, in, fmt.Sprintf("You've asked me %d times in the last hour, the most one person may here. Please try again later.", limit))
	return false
}

// countRuns counts who's runs (and the refusal) in the hour before now,
// dropping what is older.
func (c *Commands) countRuns(ctx context.Context, who string, now time.Time) (int, error) {
	since := now.Add(-time.Hour).UnixMilli()
	if _, err := c.Policy.DB.ExecContext(ctx, `DELETE FROM sender_runs WHERE sender = ? AND at <= ?`, who, since); err != nil {
		return 0, fmt.Errorf("runs of %s: %w", who, err)
	}
	var n int
	if err := c.Policy.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM sender_runs WHERE sender = ? AND at > ?`, who, since).Scan(&n); err != nil {
		return 0, fmt.Errorf("runs of %s: %w", who, err)
	}
	return n, nil
}
