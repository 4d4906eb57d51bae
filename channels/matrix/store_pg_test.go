package matrix

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels/matrix/matrixfake"
	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/store"
)

func TestStoreFor(t *testing.T) {
	const dsn = "postgres://botd:s3cret@db/botd"
	pg := StoreFor(store.Config{Driver: "postgres", DSN: dsn}, "/data")
	if pg.PostgresDSN != dsn || pg.DataDir != "/data" || strings.Contains(pg.String(), "s3cret") {
		t.Errorf("postgres: %+v, named %q", pg, pg.String())
	}
	if s := StoreFor(store.DefaultConfig(), "/data"); s.PostgresDSN != "" || s.DataDir != "/data" {
		t.Errorf("sqlite: %+v", s)
	}
}

// pgHarness is a harness whose channels keep their state in a fresh
// Postgres database; the first channel is built over it.
func pgHarness(t *testing.T, mut ...func(*Config)) *harness {
	t.Helper()
	dsn := pgtest.DSN(t)
	h := newHarness(t, mut...)
	h.pgDSN = dsn
	h.mx = h.build(t)
	return h
}

// TestStandbyResumesTheSyncFromPostgres: two instances, one after the
// other, on one Postgres database and each with a data dir of its own
// (as an active and a standby). The second logs in with nothing (the
// first's password-login token and device) and resumes the sync where
// the first left it: a message posted while neither ran is delivered by
// the second, once, and nothing the first delivered comes again. Neither
// writes a state file.
func TestStandbyResumesTheSyncFromPostgres(t *testing.T) {
	h := pgHarness(t, func(c *Config) { c.AccessToken, c.Password = "", matrixfake.Password })
	h.fake.Post(family, ann, obj{"msgtype": "m.text", "body": "old history"})
	firstDir := h.dataDir
	stop := h.start(t, h.mx)
	first := h.fake.Post(family, ann, obj{"msgtype": "m.text", "body": "one"})
	if in := h.sink.Next(t); in.ID != first {
		t.Fatalf("got %+v, want the first live message", in)
	}
	pos := h.fake.Position()
	h.fake.Wait(t, "the position after the first message saved and asked for", func() bool { return h.fake.SyncedFrom(pos) })
	stop()
	if h.fake.Logins() != 1 {
		t.Fatalf("logins = %d", h.fake.Logins())
	}

	// While neither runs.
	during := h.fake.Post(family, ann, obj{"msgtype": "m.text", "body": "during the failover"})
	before := len(h.fake.Syncs())

	h.dataDir = t.TempDir()
	standby := h.build(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); standby.Wait() }()
	if err := standby.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if in := h.sink.Next(t); in.ID != during {
		t.Fatalf("the standby delivered %q (%q) first, want the message posted during the failover", in.ID, in.Text)
	}
	if s := h.fake.Syncs(); s[before] != pos {
		t.Errorf("the standby synced from %q, want the first instance's %q", s[before], pos)
	}
	if h.fake.Logins() != 1 {
		t.Errorf("the standby logged in again (%d logins); the token in postgres should do", h.fake.Logins())
	}
	after := h.fake.Post(family, ann, obj{"msgtype": "m.text", "body": "after"})
	if in := h.sink.Next(t); in.ID != after {
		t.Fatalf("got %q (%q), want the next live message: something was delivered twice", in.ID, in.Text)
	}
	if n := h.sink.Total(); n != 3 {
		t.Errorf("%d messages delivered in all, want 3", n)
	}
	for _, dir := range []string{firstDir, h.dataDir} {
		if _, err := os.Stat(StatePath(dir)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a state file was written in %s: %v", filepath.Base(dir), err)
		}
	}
}

// TestPostgresStateOfAnotherHomeserverIsNotResumed: the row is the
// account's, and a config naming another homeserver for the same user
// starts afresh (no history), as with the state file.
func TestPostgresStateOfAnotherHomeserverIsNotResumed(t *testing.T) {
	h := pgHarness(t)
	ctx := context.Background()
	ss, err := h.storeAt().openStateStore(ctx, h.cfg.UserID)
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.save(ctx, state{Homeserver: "https://elsewhere.example", UserID: h.cfg.UserID, Since: "s-elsewhere"}); err != nil {
		t.Fatal(err)
	}
	ss.close()
	h.start(t, h.mx)
	if s := h.fake.Syncs(); len(s) == 0 || s[0] != "" {
		t.Fatalf("the first sync was from %q, want an initial sync", s)
	}
	ss, err = h.storeAt().openStateStore(ctx, h.cfg.UserID)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.close()
	st, err := ss.load(ctx)
	if err != nil || st.Homeserver != h.cfg.Homeserver || st.Since == "" || st.Since == "s-elsewhere" {
		t.Errorf("state after the start: %+v, %v", st, err)
	}
}
