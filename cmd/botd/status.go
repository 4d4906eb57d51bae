package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/store"
)

const statusLine = "botd status [--config FILE]"

// cmdStatus says which instance is active, from the lease in the database
// (any instance, or none running, can ask): exit 0 when one is, 3 when
// none is.
func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", statusLine,
		"Print which botd instance is active on the config's database: its instance id, since when, the lease's epoch "+
			"and when it was last renewed. Exit status 3 when no instance holds the lease.", stderr)
	cfgFlag := configFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	// It reads the lease: a mistake anywhere else is only a warning.
	cfg, err := loadConfigFor(*cfgFlag, under("data_dir", "database", "timezone", "log_level"), stderr)
	if err != nil {
		return err
	}
	if err := databaseExists(cfg, "botd has not run here"); err != nil {
		return err
	}
	st, err := store.Connect(ctx, *config.Section[store.Config](cfg), cfg.DataDir)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer st.Close()
	l, found, err := st.CurrentLease(ctx)
	if err != nil {
		return fail(1, "%v", err)
	}
	now := time.Now()
	loc := cfg.Location()
	at := func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04:05 MST") }
	fmt.Fprintf(stdout, "database: %s\n", config.Section[store.Config](cfg).Driver)
	// What `botd mcp` asks before each call: does a botd run hold this
	// data folder (its IPC is there)?
	if holder, up, err := probeDataDir(cfg.DataDir); err != nil {
		fmt.Fprintf(stdout, "this data folder: %v\n", err)
	} else if up {
		fmt.Fprintf(stdout, "this data folder: botd run %sholds it\n", holder)
	} else {
		fmt.Fprintln(stdout, "this data folder: no botd run holds it (start one with botd run; botd mcp answers that it is not running)")
	}
	switch {
	case !found:
		fmt.Fprintln(stdout, "active: none (no instance has held the lease yet)")
		return fail(3, "")
	case !l.Live(now):
		fmt.Fprintf(stdout, "active: none (the lease of %s, epoch %d, lapsed at %s, %s ago)\n", l.Holder, l.Epoch, at(l.Expires), ago(now.Sub(l.Expires)))
		return fail(3, "")
	}
	fmt.Fprintf(stdout, "active: %s\nsince: %s (%s ago)\nepoch: %d\nrenewed: %s ago; lapses in %s without a renewal\n",
		l.Holder, at(l.Acquired), ago(now.Sub(l.Acquired)), l.Epoch, ago(now.Sub(l.Renewed)), ago(l.Expires.Sub(now)))
	return nil
}

// ago rounds a span for a person: seconds under a minute, then minutes.
func ago(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
