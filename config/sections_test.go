package config

// The components register their sections from their own packages
// (settings.Register in an init); botd links them in cmd/botd, these
// tests here. config itself imports none of them.
import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/internal/settings"

	_ "github.com/botd-dev/botd/access"
	"github.com/botd-dev/botd/agent"
	_ "github.com/botd-dev/botd/mcp"
	_ "github.com/botd-dev/botd/media"
	_ "github.com/botd-dev/botd/media/generation"
	"github.com/botd-dev/botd/media/links"
	_ "github.com/botd-dev/botd/ops"
	_ "github.com/botd-dev/botd/scheduler"
	"github.com/botd-dev/botd/store"
)

// A section is handed back by its type, decoded over its own defaults;
// each Parse has its own, and a type no package registered is a
// programming error that says so.
func TestSectionByType(t *testing.T) {
	cfg, err := Parse([]byte("agent: {max_iterations: 3}\ninternet: {fetch: {max_bytes: 4096}}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	a := Section[agent.Config](cfg)
	if a.MaxIterations != 3 || a.MaxConcurrent != agent.DefaultConfig().MaxConcurrent {
		t.Errorf("agent = %+v, want max_iterations 3 over the defaults", a)
	}
	if Section[agent.Config](cfg) != a {
		t.Error("the section is not the same value twice")
	}
	if got := Section[links.Config](cfg).Fetch.MaxBytes; got != 4096 {
		t.Errorf("internet.fetch.max_bytes = %d, want 4096", got)
	}

	other, err := Parse(nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	Section[agent.Config](other).MaxIterations = 99
	if a.MaxIterations != 3 || Section[agent.Config](Defaults()).MaxIterations != agent.DefaultConfig().MaxIterations {
		t.Error("two configs share a section")
	}

	type unregistered struct{ X int }
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "no section of type config.unregistered is registered") {
			t.Errorf("panic = %q", msg)
		}
	}()
	Section[unregistered](cfg)
}

// What a reload changed is named inside a registered section and inside
// one nested in it (media.generation), at the keys a user writes.
func TestChangedInsideSections(t *testing.T) {
	parse := func(src string) *Config {
		t.Helper()
		c, err := Parse([]byte(src), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := parse("media: {max_download_bytes: 5000000, generation: {speech: {voice: nova}}}\nscheduler: {grace: 1h}\n")
	next := parse("media: {max_download_bytes: 6000000, generation: {speech: {voice: alloy}}}\nscheduler: {grace: 1h}\nops: {listen: \"\"}\n")
	got := sortedCopy(Changed(old, next))
	want := []string{"media.generation.speech.voice", "media.max_download_bytes", "ops.listen"}
	if !slices.Equal(got, want) {
		t.Errorf("Changed = %q, want %q", got, want)
	}
}

// An SQLite database file is relative to the config file, like data_dir
// (the section's Paths); a Postgres DSN is not a path and stays as written.
func TestDatabasePathIsRelativeToTheConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ src, want string }{
		{"database: {dsn: db/botd.db}\n", filepath.Join(dir, "db", "botd.db")},
		{"database: {driver: postgres, dsn: \"host=db user=botd\"}\n", "host=db user=botd"},
	} {
		path := filepath.Join(dir, "botd.yaml")
		if err := os.WriteFile(path, []byte(tc.src), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := Section[store.Config](cfg).DSN; got != tc.want {
			t.Errorf("%s: dsn = %q, want %q", strings.TrimSpace(tc.src), got, tc.want)
		}
	}
}

// A component that registers its section where it cannot go is told at
// once: inside a section no package registered, at a key config reads
// itself, or at a key its outer section already has.
func TestSchemaRefusesMisplacedSections(t *testing.T) {
	type outer struct {
		Voice string `yaml:"voice"`
	}
	type inner struct{ N int }
	sec := func(key string, v any) settings.Section {
		return settings.Section{Key: key, New: func() any { return v }}
	}
	for _, tc := range []struct {
		name string
		secs []settings.Section
		want string
	}{
		{"no outer section", []settings.Section{sec("speech.extra", &inner{})}, "section speech.extra is registered, but not speech, which holds it"},
		{"config's own key", []settings.Section{sec("llm", &outer{})}, "section llm is registered, but config has that key itself"},
		{"the outer section's key", []settings.Section{sec("speech", &outer{}), sec("speech.voice", &inner{})}, "section speech.voice is also a key of section speech"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if msg, _ := recover().(string); !strings.Contains(msg, tc.want) {
					t.Errorf("panic = %q, want %q", msg, tc.want)
				}
			}()
			buildSchema(tc.secs)
		})
	}
}
