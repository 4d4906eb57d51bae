package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/store/sqlstore"

	"github.com/botd-dev/botd/channels/whatsapp/watest"
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

// The WhatsApp session goes along: whatsmeow on Postgres reads the device
// paired on SQLite (same JID, same keys) and every row its client wrote;
// a Postgres database that holds a session already is refused.
func TestDatabaseMigrateWhatsAppSession(t *testing.T) {
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), "data_dir: ./data\nchannels: {whatsapp: {enabled: true}}\n")
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "data", "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.UpsertChat(ctx, store.Chat{ID: "whatsapp:" + watest.Group.String(), Name: "Family", IsGroup: true})
	st.Close()
	wa, err := sqlstore.New(ctx, "sqlite", store.DSN(filepath.Join(dir, "data", "whatsapp.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := watest.PairedDevice(t, wa)
	wa.Close()

	out, code := runCLI(t, dir, "database", "migrate", "--to", "postgres", "--dsn", dsn, "--config", "botd.yaml")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, w := range []string{"chats 1 1", "whatsmeow_device 1 1", "whatsmeow_pre_keys 12 12", "whatsmeow_sessions 1 1",
		"whatsmeow_chat_settings 2 2", "whatsmeow_app_state_mutation_macs 1 1", "whatsmeow_lid_map 1 1", "whatsmeow_event_buffer 1 1",
		"28 rows of 16 tables from " + filepath.Join(dir, "data", "whatsapp.db"), "every count matches", "The WhatsApp session is in Postgres now"} {
		if !strings.Contains(flat, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "whatsmeow_version") {
		t.Errorf("whatsmeow's version row was copied (postgres keeps its own):\n%s", out)
	}
	pg, err := sqlstore.New(ctx, "pgx", dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pg.GetFirstDevice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := watest.SameDevice(got, want); err != nil {
		t.Errorf("the device on postgres: %v", err)
	}
	pg.Close()

	// A second database holding a session but no botd data: refused, and
	// botd's tables stay empty.
	dsn2 := pgtest.DSN(t)
	pg, err = sqlstore.New(ctx, "pgx", dsn2, nil)
	if err != nil {
		t.Fatal(err)
	}
	watest.PairedDevice(t, pg)
	pg.Close()
	out, code = runCLI(t, dir, "database", "migrate", "--to", "postgres", "--dsn", dsn2, "--config", "botd.yaml")
	if code != 1 || !strings.Contains(out, "already holds whatsapp session data") {
		t.Fatalf("copy into a database with a session: exit %d:\n%s", code, out)
	}
	dst, err := store.Connect(ctx, store.Config{Driver: "postgres", DSN: dsn2}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if chats, err := dst.Chats(ctx); err != nil || len(chats) != 0 {
		t.Errorf("chats after a refused copy: %v, %v", chats, err)
	}
}
