package links_test

import (
	"testing"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/media/links"
)

func TestDefaultConfigIsValid(t *testing.T) {
	if ps := settings.Of(links.DefaultConfig().Validate()); len(ps) > 0 {
		t.Errorf("defaults are refused: %v", ps)
	}
}

// Each part's problems are reported at their place in the file, under
// internet.
func TestConfigProblemsAtTheirKeyPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*links.Config)
		want string
	}{
		{"fetch", func(c *links.Config) { c.Fetch.MaxBytes = 0 }, "internet.fetch.max_bytes"},
		{"search", func(c *links.Config) { c.Search.Provider = "altavista" }, "internet.search.provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := links.DefaultConfig()
			tc.edit(&c)
			ps := settings.Of(c.Validate())
			if len(ps) != 1 || ps[0].Path != tc.want {
				t.Fatalf("problems = %v, want one at %s", ps, tc.want)
			}
		})
	}
}
