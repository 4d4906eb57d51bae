package media

import (
	"strings"
	"time"

	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/mediaregistry/s3store/bucket"
)

// Config is the media section of botd's config file.
type Config struct {
	RefTTL           settings.Duration `yaml:"ref_ttl"`
	CacheTTL         settings.Duration `yaml:"cache_ttl"`
	InlineMaxBytes   int64             `yaml:"inline_max_bytes"`
	MaxDownloadBytes int64             `yaml:"max_download_bytes"`
	// MaxDiskBytes bounds every byte stored for media: the cache, group
	// copies, inline copies.
	MaxDiskBytes int64 `yaml:"max_disk_bytes"`
	// GroupShare is each group's share of MaxDiskBytes for files that
	// exist nowhere else (web uploads); 0 shares the budget equally
	// among the groups, each at least twice MaxDownloadBytes.
	GroupShare    int64             `yaml:"group_share"`
	SweepInterval settings.Duration `yaml:"sweep_interval"`
	// DownloadTimeout bounds one download; DownloadIdleTimeout cuts one
	// that sent nothing for that long; DownloadsPerGroup bounds a group's
	// concurrent downloads (others queue).
	DownloadTimeout     settings.Duration `yaml:"download_timeout"`
	DownloadIdleTimeout settings.Duration `yaml:"download_idle_timeout"`
	DownloadsPerGroup   int               `yaml:"downloads_per_group"`
	// Describe is a vision model that describes images for a model that
	// cannot see them; unset, such a model gets a note instead.
	Describe ModelRef `yaml:"describe"`
	// Transcription turns voice notes and audio into text: a provider of
	// type openai (an OpenAI-compatible transcription API) or gemini.
	Transcription ModelRef `yaml:"transcription"`
	// media.generation (images, speech, videos) is media/generation's
	// section; config composes it into this one.
	// Store is where media bytes are kept for good: the local cache
	// folder, or an S3-compatible bucket.
	Store StoreConfig `yaml:"store"`
	// LinkTTL is how long a resource or presigned URL handed to a remote
	// MCP client stays valid.
	LinkTTL settings.Duration `yaml:"link_ttl"`
	// Parse bounds the child processes that read members' files.
	Parse ParseConfig `yaml:"parse"`
}

// ParseConfig is media.parse: every parser of a member's file (a
// document's text, an image's preview, a video's stills and sound, scanned
// pages) runs in a child process under these limits, and all children
// together hold at most TotalMemoryBytes (the rest queue).
type ParseConfig struct {
	MemoryBytes      int64             `yaml:"memory_bytes"`
	CPU              settings.Duration `yaml:"cpu"`
	Timeout          settings.Duration `yaml:"timeout"`
	TotalMemoryBytes int64             `yaml:"total_memory_bytes"`
}

// Limits are the limits of one child.
func (p ParseConfig) Limits() box.Limits {
	return box.Limits{Memory: p.MemoryBytes, CPU: p.CPU.D(), Timeout: p.Timeout.D()}
}

// Media store types.
const (
	StoreLocal = "local"
	StoreS3    = "s3"
)

// StoreConfig is media.store. The bucket settings are read by
// `botd media migrate` whatever the type, so they may stay while the type
// goes back to local.
type StoreConfig struct {
	Type      string `yaml:"type"` // local (default) | s3
	Endpoint  string `yaml:"endpoint"`
	Bucket    string `yaml:"bucket"`
	Region    string `yaml:"region"`
	Prefix    string `yaml:"prefix"`
	AccessKey string `yaml:"access_key"`
	SecretKey string `yaml:"secret_key"`
	PathStyle bool   `yaml:"path_style"`
	// PublicEndpoint is the URL presigned links name, when clients reach
	// the server by another address than botd does.
	PublicEndpoint string `yaml:"public_endpoint"`
}

// S3 is the bucket configuration of the store.
func (m StoreConfig) S3() bucket.Config {
	return bucket.Config{Endpoint: m.Endpoint, Bucket: m.Bucket, Region: m.Region, Prefix: m.Prefix,
		AccessKey: m.AccessKey, SecretKey: m.SecretKey, PathStyle: m.PathStyle, PublicEndpoint: m.PublicEndpoint}
}

// ModelRef names a model of llm.providers for a media job.
type ModelRef struct {
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
}

// DefaultConfig is the section a config file is decoded over, and the
// values New takes for zero Options. RefTTL stays zero: each network's own
// lifetime (mediaregistry.DefaultRefTTL). InlineMaxBytes and LinkTTL are
// what package mcp takes for zero options too (a test holds them equal):
// importing mcp here would link its server into every channel.
func DefaultConfig() Config {
	return Config{
		CacheTTL:            settings.Duration(24 * time.Hour),
		InlineMaxBytes:      1 << 20,
		MaxDownloadBytes:    100 << 20,
		MaxDiskBytes:        diskbudget.DefaultMaxBytes,
		SweepInterval:       settings.Duration(time.Minute),
		DownloadTimeout:     settings.Duration(10 * time.Minute),
		DownloadIdleTimeout: settings.Duration(time.Minute),
		DownloadsPerGroup:   4,
		Store:               StoreConfig{Type: StoreLocal},
		LinkTTL:             settings.Duration(15 * time.Minute),
		Parse: ParseConfig{MemoryBytes: box.DefaultMemory, CPU: settings.Duration(box.DefaultCPU),
			Timeout: settings.Duration(box.DefaultTimeout), TotalMemoryBytes: box.DefaultTotalMemory},
	}
}

// The section registers itself: package config decodes media through
// Config without importing this package.
func init() {
	settings.Register("media", DefaultConfig, func(c *Config, s settings.Shared) error { return c.Validate(s.Providers) })
}

// minParseMemory is the least media.parse.memory_bytes: what ffmpeg or a
// Go job needs to start at all.
const minParseMemory = 16 << 20

// Validate reports every problem of the section with its key path.
// providers maps each name of llm.providers to its type, which the media
// jobs' models must name.
func (c Config) Validate(providers map[string]string) error {
	var ps settings.Problems
	if c.RefTTL < 0 {
		ps.Add("media.ref_ttl", "must not be negative (leave it unset for each network's own lifetime)")
	}
	if c.CacheTTL <= 0 {
		ps.Add("media.cache_ttl", "must be positive")
	}
	if c.SweepInterval <= 0 {
		ps.Add("media.sweep_interval", "must be positive")
	}
	if c.DownloadTimeout <= 0 {
		ps.Add("media.download_timeout", "must be positive")
	}
	if c.DownloadIdleTimeout <= 0 {
		ps.Add("media.download_idle_timeout", "must be positive")
	} else if c.DownloadIdleTimeout > c.DownloadTimeout {
		ps.Add("media.download_idle_timeout", "must not exceed media.download_timeout")
	}
	if c.DownloadsPerGroup <= 0 || c.DownloadsPerGroup > 64 {
		ps.Add("media.downloads_per_group", "must be between 1 and 64")
	}
	if c.InlineMaxBytes <= 0 {
		ps.Add("media.inline_max_bytes", "must be positive")
	}
	if c.MaxDownloadBytes <= 0 {
		ps.Add("media.max_download_bytes", "must be positive")
	} else if c.InlineMaxBytes > c.MaxDownloadBytes {
		ps.Add("media.inline_max_bytes", "must not exceed media.max_download_bytes")
	}
	CheckModelRef(&ps, providers, "media.describe", c.Describe)
	CheckModelRef(&ps, providers, "media.transcription", c.Transcription)
	if t, ok := providers[c.Transcription.Provider]; ok && t == "anthropic" {
		ps.Add("media.transcription.provider", "%q is an anthropic provider, and anthropic has no transcription API; name an openai-compatible or gemini provider", c.Transcription.Provider)
	}
	if c.MaxDiskBytes <= 0 {
		ps.Add("media.max_disk_bytes", "must be positive")
	} else if c.MaxDownloadBytes > 0 && c.MaxDiskBytes < 2*c.MaxDownloadBytes {
		// A fetched file is stored twice: in the cache and as the group's
		// own copy.
		ps.Add("media.max_disk_bytes", "must be at least twice media.max_download_bytes (%d): a fetched file is kept in the cache and in the group's folder", c.MaxDownloadBytes)
	}
	if c.GroupShare < 0 || (c.MaxDiskBytes > 0 && c.GroupShare > c.MaxDiskBytes) {
		ps.Add("media.group_share", "must be between 0 (an equal part of media.max_disk_bytes for each group) and media.max_disk_bytes (%d)", c.MaxDiskBytes)
	}
	c.Store.check(&ps)
	if pa := c.Parse; pa.MemoryBytes < minParseMemory {
		ps.Add("media.parse.memory_bytes", "must be at least %d (16 MB): below that no parser starts", minParseMemory)
	} else if pa.TotalMemoryBytes < pa.MemoryBytes {
		ps.Add("media.parse.total_memory_bytes", "must be at least media.parse.memory_bytes (%d): one file must fit", pa.MemoryBytes)
	}
	if c.Parse.CPU.D() < time.Second {
		ps.Add("media.parse.cpu", "must be at least 1s")
	}
	if c.Parse.Timeout.D() < time.Second {
		ps.Add("media.parse.timeout", "must be at least 1s")
	}
	if c.LinkTTL <= 0 || c.LinkTTL.D() > 7*24*time.Hour {
		ps.Add("media.link_ttl", "must be positive and at most 168h (S3 presigned URLs last a week at most)")
	}
	return ps.Err()
}

// CheckModelRef checks a {provider, model} media job at path: both or
// neither, and the provider must exist.
func CheckModelRef(ps *settings.Problems, providers map[string]string, path string, m ModelRef) {
	switch {
	case m.Provider == "" && m.Model == "":
	case m.Provider == "":
		ps.Add(path+".provider", "must name a provider of llm.providers")
	case m.Model == "":
		ps.Add(path+".model", "must not be empty")
	default:
		if _, ok := providers[m.Provider]; !ok {
			ps.Add(path+".provider", "unknown provider %q (not under llm.providers)", m.Provider)
		}
	}
}

// check checks media.store: the type, and for s3 every setting the bucket
// needs. Whether the bucket answers is `botd config check`'s business (it
// needs the network).
func (st StoreConfig) check(ps *settings.Problems) {
	const sec = "media.store."
	switch st.Type {
	case StoreLocal:
		return
	case StoreS3:
	default:
		ps.Add(sec+"type", "must be local or s3")
		return
	}
	if st.Endpoint == "" {
		ps.Add(sec+"endpoint", "is required for type s3 (e.g. https://s3.eu-central-1.amazonaws.com or http://127.0.0.1:9000)")
	} else if _, err := bucket.ParseEndpoint(st.Endpoint); err != nil {
		ps.Add(sec+"endpoint", "%s", strings.TrimPrefix(err.Error(), "s3 store: "))
	}
	if st.Bucket == "" {
		ps.Add(sec+"bucket", "is required for type s3")
	}
	if st.PublicEndpoint != "" {
		if _, err := bucket.ParseEndpoint(st.PublicEndpoint); err != nil {
			ps.Add(sec+"public_endpoint", "%s", strings.TrimPrefix(err.Error(), "s3 store: "))
		}
	}
	for _, k := range []struct{ key, v string }{{"access_key", st.AccessKey}, {"secret_key", st.SecretKey}} {
		if k.v == "" {
			ps.AddSecret(sec+k.key, "is required for type s3", ": set %s")
		}
	}
}
