package config

import (
	"errors"
	"testing"
	"time"

	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/generation"
)

// The media section is two components' own, composed: the media
// service's keys and media.generation, the generation service's. A file
// sets both where a user writes them, each decoded over its defaults; a
// misspelt key of either is reported with a suggestion, at its path.
func TestMediaSectionComposesGeneration(t *testing.T) {
	src := `
media:
  max_download_bytes: 5000000
  generation:
    speech: {voice: nova}
    video: {max_jobs_per_group: 3}
`
	cfg, err := Parse([]byte(src), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	m, g := Section[media.Config](cfg), Section[generation.Config](cfg)
	if m.MaxDownloadBytes != 5000000 || g.Speech.Voice != "nova" || g.Video.MaxJobsPerGroup != 3 {
		t.Errorf("decoded media = %+v", m)
	}
	// What the file leaves out keeps each component's default.
	if m.CacheTTL.D() != 24*time.Hour || g.Video.Timeout.D() != 30*time.Minute {
		t.Errorf("defaults lost: cache_ttl %v, generation.video.timeout %v", m.CacheTTL.D(), g.Video.Timeout.D())
	}

	for _, tc := range []struct{ src, want string }{
		{"media: {max_downlod_bytes: 1}", "media.max_downlod_bytes: unknown key (did you mean max_download_bytes?)"},
		{"media: {generaton: {}}", "media.generaton: unknown key (did you mean generation?)"},
		{"media: {generation: {video: {max_jobs_per_group: 0}}}", "media.generation.video.max_jobs_per_group: must be between 1 and 20"},
	} {
		_, err := Parse([]byte(tc.src), noEnv)
		var ps Problems
		if !errors.As(err, &ps) || len(ps) != 1 || ps[0].String() != tc.want {
			t.Errorf("%s: problems = %v, want %q", tc.src, err, tc.want)
		}
	}
}
