package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/botd-dev/botd/channels/whatsapp"
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
	from := cfg.Database
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
	counts, err := src.CopyTo(ctx, dst)
	if err != nil {
		return fail(1, "%v", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\tsqlite\tpostgres\t")
	var rows int64
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", c.Table, c.From, c.To)
		rows += c.To
	}
	tw.Flush()
	fmt.Fprintf(stdout, "copied %d rows of %d tables from %s; every count matches.\n", rows, len(counts), path)
	fmt.Fprintln(stdout, "Now set database.driver: postgres and database.dsn in the config, and start botd.")
	if cfg.Channels.WhatsApp.Enabled {
		fmt.Fprintf(stdout, "The WhatsApp session is not in this database: it stays in %s (channels.whatsapp.session_db).\n",
			whatsapp.SessionPath(cfg.Channels.WhatsApp.SessionDB, cfg.DataDir))
	}
	return nil
}
