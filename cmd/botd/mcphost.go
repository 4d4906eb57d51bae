package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/tools"
)

// notRunning is what a tool call of `botd mcp` answers when no `botd run`
// holds the data folder: at once, not after the call's two-minute wait
// (an MCP client gives up at 60 s and shows a bare timeout). It names no
// path: the model reads it.
var notRunning = &tools.Error{Code: tools.CodeNoHost,
	Message: "botd is not running, so nothing can answer this tool: start `botd run` (or its service) and try again; `botd status` says which instance is active"}

// hostPoll is how often a call in flight looks whether `botd run` still
// holds the data folder, so a botd that stops mid-call is reported
// within a second too.
const hostPoll = 250 * time.Millisecond

// runningCaller is the stdio server's way to the host: each call first
// asks the data folder's lock whether `botd run` holds it, and a call in
// flight ends as soon as it lets go.
type runningCaller struct {
	next    mcp.Caller
	dataDir string
}

func (c *runningCaller) Call(ctx context.Context, typ string, args, result any) error {
	if up, err := dataDirRunning(c.dataDir); err != nil {
		return &tools.Error{Code: tools.CodeInternal, Message: "cannot tell whether botd is running: " + err.Error()}
	} else if !up {
		return notRunning
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		t := time.NewTicker(hostPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if up, err := dataDirRunning(c.dataDir); err == nil && !up {
					cancel(notRunning)
					return
				}
			}
		}
	}()
	err := c.next.Call(ctx, typ, args, result)
	if errors.Is(context.Cause(ctx), notRunning) {
		return notRunning
	}
	return err
}

// dataDirRunning tells whether a `botd run` holds dir's lock file. No
// file is no botd; a lock that cannot be opened is an error saying which
// folder and group this user lacks.
func dataDirRunning(dir string) (bool, error) {
	_, up, err := probeDataDir(dir)
	return up, err
}

// probeDataDir tries a shared lock on dir's lock file without waiting
// and lets go at once; a held lock is a running botd, whose "(pid N,
// running since T) " it returns when written.
func probeDataDir(dir string) (holder string, running bool, err error) {
	path := filepath.Join(dir, dataLockName)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case errors.Is(err, fs.ErrPermission):
		return "", false, accessError(path, err)
	case err != nil:
		return "", false, fmt.Errorf("data_dir: %w", err)
	}
	defer f.Close()
	if err := groups.Flock(f, false, false); !errors.Is(err, syscall.EWOULDBLOCK) {
		return "", false, nil
	}
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	if h := holderOf(b[:n]); h != "" {
		return h, true, nil
	}
	return "(starting) ", true, nil
}

// checkHostAccess is the stdio server's look before it serves: this OS
// user must reach the data folder's lock and the group's IPC folder, or
// every tool would fail; the error names the folder and the group to
// join. That botd is not running is no error here: calls say so.
func checkHostAccess(dataDir, folder string) error {
	if _, _, err := probeDataDir(dataDir); err != nil {
		return err
	}
	l := ipc.GroupLayout(filepath.Join(dataDir, "ipc"), folder)
	if err := l.Ensure(); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return accessError(firstDenied(dataDir, l.Requests()), err)
		}
		return err
	}
	for _, d := range []string{l.Requests(), l.Responses()} {
		if err := unix.Access(d, unix.W_OK|unix.X_OK); err != nil {
			return accessError(d, err)
		}
	}
	return nil
}

// firstDenied walks from root down to path and returns the first folder
// this user cannot enter or write, the one whose group matters.
func firstDenied(root, path string) string {
	var chain []string
	for q := path; ; q = filepath.Dir(q) {
		chain = append([]string{q}, chain...)
		if q == root || q == filepath.Dir(q) {
			break
		}
	}
	for _, q := range chain {
		if _, err := os.Stat(q); errors.Is(err, fs.ErrNotExist) {
			return filepath.Dir(q)
		}
		if unix.Access(q, unix.X_OK) != nil {
			return q
		}
	}
	return path
}

// accessError says which folder (or file) this OS user may not use, who
// owns it and which group to join: `botd mcp` from Claude Desktop runs as
// the desktop user, `botd run` often as its own.
func accessError(path string, err error) error {
	target := path
	fi, serr := os.Stat(target)
	if serr != nil {
		// The file is out of reach: its folder is what blocks.
		target = filepath.Dir(path)
		fi, serr = os.Stat(target)
	}
	var st *syscall.Stat_t
	if serr == nil {
		st, _ = fi.Sys().(*syscall.Stat_t)
	}
	me := currentUser()
	if st == nil {
		return fmt.Errorf("permission denied on %s (%v): run this command as the user `botd run` runs as", path, err)
	}
	owner, group := strconv.Itoa(int(st.Uid)), strconv.Itoa(int(st.Gid))
	if u, err := user.LookupId(owner); err == nil {
		owner = u.Username
	}
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	return fmt.Errorf("permission denied on %s (owner %s, group %s, mode %s): user %s needs to be in group %s "+
		"(sudo usermod -aG %s %s, then log in again) with the folder open to its group (chmod g+rwx), or run this command as user %s",
		target, owner, group, fi.Mode().Perm(), me, group, group, me, owner)
}

// currentUser is this process's user name, or its uid.
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}
