package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/store"
)

// botd database migrate copies the SQLite database of a config into an
// empty Postgres database, reports the counts, and refuses a second copy;
// botd on the copy finds what the file held.
func TestDatabaseMigrateToPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), "data_dir: ./data\n")
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "data", "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.UpsertChat(ctx, store.Chat{ID: "telegram:-1", Name: "Family", IsGroup: true})
	for _, id := range []string{"a", "b", "c"} {
		if _, err := st.PutMessage(ctx, store.Message{ChatID: "telegram:-1", ID: id, Text: "m " + id, Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	out, code := runCLI(t, dir, "database", "migrate", "--to", "postgres", "--dsn", dsn, "--config", "botd.yaml")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, w := range []string{"messages       3         3", "chats       1         1", "every count matches", "database.driver: postgres"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(w), " ")) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	pg, err := store.Connect(ctx, store.Config{Driver: "postgres", DSN: dsn}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	msgs, err := pg.MessagesAfter(ctx, []string{"telegram:-1"}, 0, 10)
	if err != nil || len(msgs) != 3 || msgs[2].Text != "m c" {
		t.Fatalf("messages on postgres: %+v, %v", msgs, err)
	}

	// Once the config names Postgres, the DSN comes from it, and a copy
	// into a database that holds botd's data is refused.
	writeFile(t, filepath.Join(dir, "pg.yaml"), "data_dir: ./data\ndatabase: {driver: postgres, dsn: \""+dsn+"\"}\n")
	out, code = runCLI(t, dir, "database", "migrate", "--to", "postgres", "--config", "pg.yaml")
	if code != 1 || !strings.Contains(out, "already holds botd data") {
		t.Fatalf("second copy: exit %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"database"}, 2, "botd database migrate --to postgres"},
		{[]string{"database", "migrate", "--to", "mysql", "--config", "botd.yaml"}, 2, "only postgres"},
		{[]string{"database", "migrate", "--to", "postgres", "--config", "botd.yaml"}, 2, "--dsn: required"},
		{[]string{"database", "migrate", "--to", "postgres", "--dsn", "postgres://u:hunter2@h:x/db", "--config", "botd.yaml"}, 2, "not a Postgres connection string"},
	} {
		out, code := runCLI(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) || strings.Contains(out, "hunter2") {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, out)
		}
	}
}
