package generation_test

import (
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/media/generation"
)

func TestDefaultConfigIsValid(t *testing.T) {
	if ps := settings.Of(generation.DefaultConfig().Validate(nil)); len(ps) > 0 {
		t.Errorf("defaults are refused: %v", ps)
	}
}

// Problems name their full key path, media.generation.…: config composes
// the section into media and reports them as they are.
func TestConfigProblemsAtTheirKeyPaths(t *testing.T) {
	providers := map[string]string{"o": "openai", "a": "anthropic"}
	for _, tc := range []struct {
		name string
		edit func(*generation.Config)
		want string
	}{
		{"speech needs openai", func(c *generation.Config) { c.Speech = generation.GenModel{Provider: "a", Model: "m"} },
			`media.generation.speech.provider: "a" is a provider of type anthropic`},
		{"image has no voice", func(c *generation.Config) { c.Image.Voice = "alloy" }, "media.generation.image.voice: only speech has a voice"},
		{"video timeout", func(c *generation.Config) { c.Video.Timeout = settings.Duration(time.Second) }, "media.generation.video.timeout"},
		{"video jobs", func(c *generation.Config) { c.Video.MaxJobsPerGroup = 0 }, "media.generation.video.max_jobs_per_group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := generation.DefaultConfig()
			tc.edit(&c)
			ps := settings.Of(c.Validate(providers))
			if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), tc.want) {
				t.Fatalf("problems = %v, want one starting %q", ps, tc.want)
			}
		})
	}
}
