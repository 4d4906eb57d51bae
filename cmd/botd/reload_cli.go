package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/botd-dev/botd/groups"
)

const reloadLine = "botd reload [--config FILE]"

// reloadWait bounds how long `botd reload` waits for the daemon's word.
const reloadWait = 30 * time.Second

// cmdReload asks the running `botd run` of the config's data folder to
// read its config again (SIGHUP to the pid its lock file holds) and
// reports how that went, from what the daemon wrote (reloadStatusName).
// A config with problems is not sent: its problems are listed as `botd
// config check` lists them, and the running botd keeps its config.
func cmdReload(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reload", reloadLine,
		"Make the running botd read its config again (as SIGHUP does): what can change live takes effect, what needs a "+
			"restart is named; a config with problems is refused and the running one stays.", stderr)
	cfgFlag := configFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	path := configPath(*cfgFlag)
	if problems, ok := checkConfig(ctx, path); !ok {
		fmt.Fprintf(stdout, "not reloaded: %s has problems; the running botd keeps its config\n", path)
		for _, p := range problems {
			fmt.Fprintln(stdout, "  "+p)
		}
		return fail(1, "")
	}
	cfg, err := loadConfig(*cfgFlag)
	if err != nil {
		return err
	}
	pid, err := runningPid(cfg.DataDir)
	if err != nil {
		return err
	}
	statusPath := filepath.Join(cfg.DataDir, reloadStatusName)
	before, _ := os.ReadFile(statusPath)
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		return fail(1, "could not signal botd (pid %d): %v", pid, err)
	}
	deadline := time.Now().Add(reloadWait)
	for {
		now, err := os.ReadFile(statusPath)
		if err == nil && !bytes.Equal(now, before) {
			var st reloadStatus
			if err := json.Unmarshal(now, &st); err != nil {
				return fail(1, "botd's answer (%s) is unreadable: %v", reloadStatusName, err)
			}
			return reportReload(stdout, pid, st)
		}
		if time.Now().After(deadline) {
			return fail(1, "sent SIGHUP to botd (pid %d), no word back within %s: a standby reads its config when it becomes active; see botd's log", pid, reloadWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// reportReload prints how a reload went; a refusal is an exit 1.
func reportReload(w io.Writer, pid int, st reloadStatus) error {
	switch st.Outcome {
	case "refused":
		fmt.Fprintf(w, "botd (pid %d) refused the config; it keeps running with the one it has:\n", pid)
		for _, p := range st.Problems {
			fmt.Fprintln(w, "  "+p)
		}
		return fail(1, "")
	case "reloaded":
		fmt.Fprintf(w, "reloaded (pid %d): %s\n", pid, strings.Join(st.Changed, ", "))
	default:
		fmt.Fprintf(w, "read again (pid %d): nothing that changes live changed\n", pid)
	}
	if len(st.Restart) > 0 {
		fmt.Fprintf(w, "needs a restart to take effect: %s\n", strings.Join(st.Restart, ", "))
	}
	return nil
}

// runningPid is the pid of the `botd run` holding dir's lock, or an error
// saying none runs there.
func runningPid(dir string) (int, error) {
	f, err := os.OpenFile(filepath.Join(dir, dataLockName), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fail(1, "botd is not running on data folder %s", dir)
	}
	if err != nil {
		return 0, fail(1, "data_dir: %v", err)
	}
	defer f.Close()
	if err := groups.Flock(f, false, false); !errors.Is(err, syscall.EWOULDBLOCK) {
		return 0, fail(1, "botd is not running on data folder %s", dir)
	}
	b, _ := io.ReadAll(io.LimitReader(f, 512))
	pid, _ := lockInfo(b)
	if pid <= 0 {
		return 0, fail(1, "botd on data folder %s is starting; try again in a moment", dir)
	}
	return pid, nil
}
