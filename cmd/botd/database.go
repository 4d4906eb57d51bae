package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/store"
)

const databaseMigrateLine = "botd database migrate --to postgres [--dsn DSN] [--config FILE]"

func cmdDatabase(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "migrate" {
		fmt.Fprintf(stderr, "Usage: %s\n", databaseMigrateLine)
		return fail(2, "")
	}
	fs := newFlags("database migrate", databaseMigrateLine,
		"Copy botd's SQLite database (database.dsn, or <data_dir>/botd.db) into an empty Postgres database, every table, "+
			"with the WhatsApp session (channels.whatsapp.session_db, or <data_dir>/whatsapp.db) when there is one, in one transaction, "+
			"and check each table's row count. Stop botd first. Then set database.driver: postgres and database.dsn.", stderr)
	to := fs.String("to", "", "the database to copy to: postgres")
	dsn := fs.String("dsn", "", "the Postgres database (host=… dbname=… or postgres://…); default database.dsn when the config already names postgres")
	cfgFlag := configFlag(fs)
	cfg, err := parseAndLoad(fs, args[1:], cfgFlag)
	if err != nil {
		return err
	}
	if *to != "postgres" {
		return fail(2, "--to: only postgres (got %q)", *to)
	}
	from := *config.Section[store.Config](cfg)
	if from.Driver == "postgres" {
		// The config was switched already: the file is where botd kept it.
		if *dsn == "" {
			*dsn = from.DSN
		}
		from = store.DefaultConfig()
	}
	if *dsn == "" {
		return fail(2, "--dsn: required (the config's database is sqlite)")
	}
	target := store.Config{Driver: "postgres", DSN: *dsn}
	if err := target.Validate(); err != nil {
		return fail(2, "--dsn: %v", err)
	}
	path := from.Path(cfg.DataDir)
	if _, err := os.Stat(path); err != nil {
		return fail(1, "nothing to copy: %s does not exist", path)
	}
	src, err := store.Connect(ctx, from, cfg.DataDir)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer src.Close()
	dst, err := store.Connect(ctx, target, "")
	if err != nil {
		return fail(1, "%v", err)
	}
	defer dst.Close()
	// A network's own session store goes along when there
	// is one, in the same transaction: a standby on Postgres takes the
	// account over with it.
	var also []store.Attached
	var sessions, notes []string
	host := channels.Host{DataDir: cfg.DataDir, Database: *config.Section[store.Config](cfg)}
	for _, n := range channels.Networks() {
		nc := cfg.Channels.Network(n.Name)
		if n.MigrateSession == nil || nc == nil {
			continue
		}
		a, path, ok, err := n.MigrateSession(ctx, host, nc, *dsn, newLogger("warn", stderr))
		if err != nil {
			return fail(1, "%v", err)
		}
		if !ok {
			continue
		}
		defer a.DB.Close()
		also = append(also, a)
		sessions = append(sessions, path)
		notes = append(notes, fmt.Sprintf(n.MigratedNote, path))
	}
	start := time.Now()
	counts, err := src.CopyTo(ctx, dst, also...)
	if err != nil {
		return fail(1, "%v", err)
	}
	took := time.Since(start)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\tsqlite\tpostgres\t")
	rows, tables := map[string]int64{}, map[string]int{}
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", c.Table, c.From, c.To)
		rows[c.Source] += c.To
		tables[c.Source]++
	}
	tw.Flush()
	fmt.Fprintf(stdout, "copied %d rows of %d tables from %s", rows["botd"], tables["botd"], path)
	for i, a := range also {
		fmt.Fprintf(stdout, " and %d rows of %d tables from %s", rows[a.Name], tables[a.Name], sessions[i])
	}
	fmt.Fprintf(stdout, " in %s; every count matches.\n", took.Round(time.Millisecond))
	fmt.Fprintln(stdout, "Now set database.driver: postgres and database.dsn in the config, and start botd.")
	for _, note := range notes {
		fmt.Fprint(stdout, note)
	}
	return nil
}
