package mcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// botd mcp is a process of its own, often of another OS user: it learns
// that a group's chat got a message from a small file botd run rewrites
// in the group's IPC folder, data/ipc/<folder>/chat.updated, which it
// watches with fsnotify. The file holds the time of the change and
// nothing else: no token, no key, no word of the chat; its name is
// botd's own.

// ChatMark is the marker file's name in a group's IPC folder.
const ChatMark = "chat.updated"

// MarkChat tells the botd mcp processes of the group whose IPC folder is
// dir (data/ipc/<folder>) that its chat got messages (stamp: the time, in
// Unix milliseconds, so that each write differs). The file
// is opened inside dir: a symlink there cannot make botd write elsewhere.
func MarkChat(dir string, stamp int64) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("chat mark: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(ChatMark, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("chat mark: %w", err)
	}
	_, err = f.WriteString(strconv.FormatInt(stamp, 10) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("chat mark: %w", err)
	}
	return nil
}

// WatchChats watches the chat marks of folders under ipcRoot (data/ipc)
// and calls each server's ChatUpdated with the folder whose mark changed,
// until ctx ends. It returns once the watches are in place (a folder
// that cannot be watched is logged and left out); an update
// that arrives while the servers are told of the last one is told once
// after it (bursts fold into one notification).
func WatchChats(ctx context.Context, ipcRoot string, log *slog.Logger, servers ...*Server) error {
	if log == nil {
		log = slog.Default()
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the chats: %w", err)
	}
	kicks := map[string]chan struct{}{} // by the folder's IPC directory
	folderOf := map[string]string{}
	for _, s := range servers {
		for _, f := range s.Folders() {
			dir := filepath.Join(ipcRoot, f)
			if _, ok := kicks[dir]; ok {
				continue
			}
			if err := w.Add(dir); err != nil {
				// The group's tools work without it; its subscribers are
				// not told until botd mcp starts again.
				if errors.Is(err, fs.ErrNotExist) {
					log.Warn("mcp: new messages of this group will not reach subscribed clients: its IPC folder does not "+
						"exist yet (botd run creates it); start botd mcp again once botd run is running", "group", f)
				} else {
					log.Warn("mcp: new messages of this group will not reach subscribed clients", "group", f, "err", err)
				}
				continue
			}
			kicks[dir] = make(chan struct{}, 1)
			folderOf[dir] = f
		}
	}
	var wg sync.WaitGroup
	for dir, kick := range kicks {
		folder := folderOf[dir]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-kick:
				}
				for _, s := range servers {
					s.ChatUpdated(folder)
				}
			}
		}()
	}
	go func() {
		defer wg.Wait()
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				log.Warn("mcp: watching the chats", "err", err)
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Base(ev.Name) != ChatMark || !ev.Has(fsnotify.Write) && !ev.Has(fsnotify.Create) {
					continue
				}
				if kick, ok := kicks[filepath.Dir(ev.Name)]; ok {
					select {
					case kick <- struct{}{}:
					default: // one is pending already
					}
				}
			}
		}
	}()
	return nil
}
