package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/botd-dev/botd/chatlog"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mcp"
)

// chatMarkGap is the least time between two looks for new messages to tell
// the botd mcp processes of (a read of the messages' primary key): a burst
// writes each group's mark at most once per gap.
const chatMarkGap = time.Second

// chatMarkPoll is how often botd run looks with no news of a message from
// its own store, on a database another instance may write to (Postgres);
// on SQLite every writer is this process and an idle botd never looks.
const chatMarkPoll = time.Minute

// markChats rewrites the chat mark (mcp.MarkChat) of every group whose
// chat got a message, until ctx ends: how a `botd mcp` (another process)
// hears of new messages for its subscribed clients.
func (d *daemon) markChats(ctx context.Context) {
	log := d.log.With("component", "chat-marks")
	l := chatlog.New(d.store)
	since, err := l.Newest(ctx)
	if err != nil {
		// From the start then: every chat's mark is written once.
		log.Warn("cannot read the newest message", "err", err)
	}
	p := chatlog.Following{Gap: chatMarkGap, Clock: d.clock}
	if d.store.Dialect == sqldialect.Postgres {
		p.Poll = chatMarkPoll
	}
	l.Follow(ctx, since, p, log, func(chats []string) {
		done := map[string]bool{}
		for _, c := range chats {
			g, ok := d.groups.ByChat(c)
			if !ok || done[g.Folder] {
				continue
			}
			done[g.Folder] = true
			l := ipc.GroupLayout(d.ipcRoot(), g.Folder)
			if err := mcp.MarkChat(l.Root, time.Now().UnixMilli()); err != nil {
				log.Debug("chat mark not written", "group", g.Folder, "err", err)
			}
		}
	})
}

// followChats makes the servers tell their subscribed clients of new
// messages: the chat marks of their groups' IPC folders. It creates no
// folder (the stdio server's checkHostAccess has; botd run does), and
// one it cannot watch leaves the tools working: it is logged, and that
// group's subscribers are not told.
func followChats(ctx context.Context, dataDir string, log *slog.Logger, servers ...*mcp.Server) {
	if err := mcp.WatchChats(ctx, filepath.Join(dataDir, "ipc"), log, servers...); err != nil {
		log.Warn("new messages will not reach subscribed clients", "err", err)
	}
}
