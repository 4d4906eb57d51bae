package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/botd-dev/botd/groups"
)

// dataLockName is the file in data_dir a running `botd run` holds an
// exclusive flock on, for its whole life, with its pid and start time.
const dataLockName = "botd.pid"

// lockDataDir takes dir for this process: one `botd run` per data folder
// (on SQLite the one instance of the database; on Postgres each instance
// has its own data_dir). The lock goes with the process, however it ends,
// and child processes do not inherit it (close-on-exec). Another botd
// holding it is named in the error, and nothing in dir — its database,
// lease, IPC folder — is touched. The caller keeps the file open until it
// exits.
func lockDataDir(dir string, now time.Time) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fail(1, "data_dir: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, dataLockName), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return nil, fail(1, "data_dir: lock: %v", err)
	}
	err = groups.Flock(f, true, false)
	for try := 0; errors.Is(err, syscall.EWOULDBLOCK) && try < 5; try++ {
		// `botd mcp` and `botd doctor` probe the lock with a shared lock
		// they hold for an instant: a start that meets one tries again.
		time.Sleep(20 * time.Millisecond)
		err = groups.Flock(f, true, false)
	}
	if err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := io.ReadAll(io.LimitReader(f, 512))
			return nil, fail(1, "another botd %suses data folder %s; stop it first, or give this one its own data_dir", holderOf(b), dir)
		}
		return nil, fail(1, "data_dir: lock %s: %v", dataLockName, err)
	}
	info := fmt.Sprintf("pid %d\nsince %s\n", os.Getpid(), now.UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(info), 0)
	}
	if err != nil {
		f.Close()
		return nil, fail(1, "data_dir: lock: %v", err)
	}
	return f, nil
}

// holderOf reads the pid and start time a lock file holds, as "(pid N,
// running since T) ", or "" when it holds neither yet (its holder is
// between taking the lock and writing it).
func holderOf(b []byte) string {
	pid, since := lockInfo(b)
	if pid <= 0 || since.IsZero() {
		return ""
	}
	return fmt.Sprintf("(pid %d, running since %s) ", pid, since.Format("2006-01-02 15:04:05 UTC"))
}

// lockInfo reads the pid and start time a lock file holds (zero when
// not written yet).
func lockInfo(b []byte) (pid int, since time.Time) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "pid":
			pid, _ = strconv.Atoi(v)
		case "since":
			since, _ = time.Parse(time.RFC3339, v)
		}
	}
	return pid, since
}
