package generation

import (
	"slices"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/media"
)

// Config is media.generation: the models that make media (images and
// edits of them, speech for voice replies, videos), each through a
// provider of llm.providers; an unset one leaves its tools out. config
// composes it into the media section.
type Config struct {
	Image  GenModel `yaml:"image"`
	Speech GenModel `yaml:"speech"`
	Video  VideoGen `yaml:"video"`
}

// GenModel is a {provider, model} that makes media, with an optional
// price per unit (USD per image, or per second of audio) for models
// botd has no price for.
type GenModel struct {
	Provider string  `yaml:"provider"`
	Model    string  `yaml:"model"`
	Price    float64 `yaml:"price"`
	// Voice is the default voice of speech (e.g. alloy); unset, the
	// provider's first.
	Voice string `yaml:"voice"`
}

// VideoGen is the video model and the bounds of its jobs.
type VideoGen struct {
	Provider string  `yaml:"provider"`
	Model    string  `yaml:"model"`
	Price    float64 `yaml:"price"` // USD per second of video
	// Timeout is how long a job may take from submission to the finished
	// video, restarts included; past it the job is cancelled.
	Timeout settings.Duration `yaml:"timeout"`
	// MaxJobsPerGroup bounds a group's unfinished jobs.
	MaxJobsPerGroup int `yaml:"max_jobs_per_group"`
}

// Ref returns the {provider, model} of g.
func (g GenModel) Ref() media.ModelRef { return media.ModelRef{Provider: g.Provider, Model: g.Model} }

// Ref returns the {provider, model} of v.
func (v VideoGen) Ref() media.ModelRef { return media.ModelRef{Provider: v.Provider, Model: v.Model} }

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config {
	return Config{Video: VideoGen{Timeout: settings.Duration(30 * time.Minute), MaxJobsPerGroup: 2}}
}

// The section registers itself: package config decodes media.generation through
// Config without importing this package.
func init() {
	settings.Register("media.generation", DefaultConfig, func(c *Config, s settings.Shared) error { return c.Validate(s.Providers) })
}

// Validate reports every problem of media.generation with its key path:
// each model like any media job, plus the API its provider's type offers.
// providers maps each name of llm.providers to its type.
func (g Config) Validate(providers map[string]string) error {
	var ps settings.Problems
	check := func(path string, m media.ModelRef, price float64, types ...string) {
		media.CheckModelRef(&ps, providers, path, m)
		if t, ok := providers[m.Provider]; ok && !slices.Contains(types, t) {
			ps.Add(path+".provider", "%q is a provider of type %s; this needs one of type %s", m.Provider, t, strings.Join(types, " or "))
		}
		if price < 0 {
			ps.Add(path+".price", "must not be negative")
		}
	}
	check("media.generation.image", g.Image.Ref(), g.Image.Price, "openai", "gemini")
	check("media.generation.speech", g.Speech.Ref(), g.Speech.Price, "openai")
	check("media.generation.video", g.Video.Ref(), g.Video.Price, "openai")
	if len(g.Speech.Voice) > 64 {
		ps.Add("media.generation.speech.voice", "must be at most 64 characters")
	}
	if g.Image.Voice != "" {
		ps.Add("media.generation.image.voice", "only speech has a voice")
	}
	if g.Video.Timeout.D() < time.Minute || g.Video.Timeout.D() > 24*time.Hour {
		ps.Add("media.generation.video.timeout", "must be between 1m and 24h")
	}
	if g.Video.MaxJobsPerGroup < 1 || g.Video.MaxJobsPerGroup > 20 {
		ps.Add("media.generation.video.max_jobs_per_group", "must be between 1 and 20")
	}
	return ps.Err()
}
