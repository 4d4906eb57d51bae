package store

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/internal/settings"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want string // a problem's path and text, "" for none
	}{
		{"default", DefaultConfig(), ""},
		{"sqlite elsewhere", Config{Driver: "sqlite", DSN: "/var/lib/botd/botd.db"}, ""},
		{"postgres", Config{Driver: "postgres", DSN: "host=/run/postgresql dbname=botd"}, ""},
		{"postgres url", Config{Driver: "postgres", DSN: "postgres://botd:pw@db.internal/botd"}, ""},
		{"postgres without dsn", Config{Driver: "postgres"}, "database.dsn: required"},
		{"postgres bad dsn", Config{Driver: "postgres", DSN: "postgres://botd:hunter2@db:notaport/botd"}, "database.dsn: not a Postgres"},
		{"mysql", Config{Driver: "mysql"}, `database.driver: must be sqlite or postgres, not "mysql"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := settings.Of(tc.c.Validate())
			if tc.want == "" {
				if len(ps) != 0 {
					t.Fatalf("problems: %v", ps)
				}
				return
			}
			if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), tc.want) {
				t.Fatalf("problems %v, want one starting %q", ps, tc.want)
			}
			if strings.Contains(ps[0].String(), "hunter2") {
				t.Fatalf("the problem repeats the password: %v", ps[0])
			}
		})
	}
}

func TestConnectDefaultsToSQLiteInTheDataDir(t *testing.T) {
	if got, want := DefaultConfig().Path("/data"), "/data/botd.db"; got != want {
		t.Fatalf("path %s, want %s", got, want)
	}
}

// Two instances starting at once against one Postgres: the advisory lock
// makes one migrate and the other find the schema current.
func TestConcurrentStartsMigrateOnce(t *testing.T) {
	c := Config{Driver: "postgres", DSN: pgtest.DSN(t)}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Connect(ctx, c, "")
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("a concurrent start failed: %v", err)
		}
	}
	s := open(t, c)
	var n int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != SchemaVersion {
		t.Fatalf("schema_migrations rows = %d, %v; want %d", n, err, SchemaVersion)
	}
}

// Text Postgres cannot keep (NUL, invalid UTF-8) from a chat member is
// stored with U+FFFD in their place, never refused.
func TestHostileTextIsStored(t *testing.T) { drivers(t, testHostileTextIsStored) }

func testHostileTextIsStored(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	if err := s.UpsertChat(ctx, Chat{ID: "telegram:1", Name: "bad\x00name\xff"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutMessage(ctx, Message{ChatID: "telegram:1", ID: "m\x00", Text: "a\x00b\xc3"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.MessagesAfter(ctx, []string{"telegram:1"}, 0, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("messages %v, %v", got, err)
	}
	want := "a\x00b\xc3" // SQLite keeps the bytes as they came
	if c.Driver == "postgres" {
		want = "a\uFFFDb\uFFFD"
	}
	if got[0].Text != want {
		t.Fatalf("text %q, want %q", got[0].Text, want)
	}
}
