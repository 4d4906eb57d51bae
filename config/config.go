// Package config loads botd's YAML configuration: environment expansion,
// strict keys, defaults and validation that reports every problem with its
// key path.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/botd-dev/botd/channels/slack"
	"github.com/botd-dev/botd/channels/telegram"
	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/channels/whatsapp"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/llm/providers"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry/s3store"
)

// Duration is a time.Duration written as "30m", "24h" in YAML.
type Duration = settings.Duration

type Config struct {
	AssistantName string           `yaml:"assistant_name"`
	DataDir       string           `yaml:"data_dir"`
	GroupsDir     string           `yaml:"groups_dir"`
	LogLevel      string           `yaml:"log_level"`
	Media         Media            `yaml:"media"`
	Channels      Channels         `yaml:"channels"`
	LLM           providers.Config `yaml:"llm"`
	Agent         Agent            `yaml:"agent"`
	MCP           MCP              `yaml:"mcp"`
	Groups        []Group          `yaml:"groups"`
	// Timezone is the IANA zone of scheduled tasks; empty is the system's.
	Timezone  string    `yaml:"timezone"`
	Scheduler Scheduler `yaml:"scheduler"`

	// secretVars maps a key path to the environment variables its raw value
	// referred to, so "set X" hints name the variable the user must export.
	secretVars map[string][]string
}

type Media struct {
	RefTTL           Duration `yaml:"ref_ttl"`
	CacheTTL         Duration `yaml:"cache_ttl"`
	InlineMaxBytes   int64    `yaml:"inline_max_bytes"`
	MaxDownloadBytes int64    `yaml:"max_download_bytes"`
	// MaxDiskBytes bounds every byte stored for media: the cache, group
	// copies, inline copies.
	MaxDiskBytes int64 `yaml:"max_disk_bytes"`
	// GroupShare is each group's share of MaxDiskBytes for files that
	// exist nowhere else (web uploads); 0 shares the budget equally
	// among the groups, each at least twice MaxDownloadBytes.
	GroupShare    int64    `yaml:"group_share"`
	SweepInterval Duration `yaml:"sweep_interval"`
	// DownloadTimeout bounds one download; DownloadIdleTimeout cuts one
	// that sent nothing for that long; DownloadsPerGroup bounds a group's
	// concurrent downloads (others queue).
	DownloadTimeout     Duration `yaml:"download_timeout"`
	DownloadIdleTimeout Duration `yaml:"download_idle_timeout"`
	DownloadsPerGroup   int      `yaml:"downloads_per_group"`
	// Describe is a vision model that describes images for a model that
	// cannot see them; unset, such a model gets a note instead.
	Describe MediaModel `yaml:"describe"`
	// Transcription turns voice notes and audio into text: a provider of
	// type openai (/audio/transcriptions) or gemini.
	Transcription MediaModel `yaml:"transcription"`
	// Generation makes media: images (and edits of them), speech for
	// voice replies, and videos, each through a provider of llm.providers.
	Generation Generation `yaml:"generation"`
	// Store is where media bytes are kept for good: the local cache
	// folder, or an S3-compatible bucket.
	Store MediaStore `yaml:"store"`
	// LinkTTL is how long a resource or presigned URL handed to a remote
	// MCP client stays valid.
	LinkTTL Duration `yaml:"link_ttl"`
	// Parse bounds the child processes that read members' files.
	Parse MediaParse `yaml:"parse"`
}

// MediaParse is media.parse: every parser of a member's file (a document's
// text, an image's preview, a video's stills and sound, scanned pages)
// runs in a child process under these limits, and all children together
// hold at most TotalMemoryBytes (the rest queue).
type MediaParse struct {
	MemoryBytes      int64    `yaml:"memory_bytes"`
	CPU              Duration `yaml:"cpu"`
	Timeout          Duration `yaml:"timeout"`
	TotalMemoryBytes int64    `yaml:"total_memory_bytes"`
}

// Limits are the limits of one child.
func (p MediaParse) Limits() box.Limits {
	return box.Limits{Memory: p.MemoryBytes, CPU: p.CPU.D(), Timeout: p.Timeout.D()}
}

// Media store types.
const (
	StoreLocal = "local"
	StoreS3    = "s3"
)

// MediaStore is media.store. The bucket settings are read by
// `botd media migrate` whatever the type, so they may stay while the type
// goes back to local.
type MediaStore struct {
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
func (m MediaStore) S3() s3store.Config {
	return s3store.Config{Endpoint: m.Endpoint, Bucket: m.Bucket, Region: m.Region, Prefix: m.Prefix,
		AccessKey: m.AccessKey, SecretKey: m.SecretKey, PathStyle: m.PathStyle, PublicEndpoint: m.PublicEndpoint}
}

// Generation names the models that make media; an unset one leaves its
// tools out.
type Generation struct {
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
	Timeout Duration `yaml:"timeout"`
	// MaxJobsPerGroup bounds a group's unfinished jobs.
	MaxJobsPerGroup int `yaml:"max_jobs_per_group"`
}

// MediaModel returns the {provider, model} of g.
func (g GenModel) MediaModel() MediaModel { return MediaModel{Provider: g.Provider, Model: g.Model} }

// MediaModel returns the {provider, model} of v.
func (v VideoGen) MediaModel() MediaModel { return MediaModel{Provider: v.Provider, Model: v.Model} }

// Channels holds each channel's own section; the channel packages define
// the settings, their defaults and their validation.
type Channels struct {
	Telegram telegram.Config `yaml:"telegram"`
	Slack    slack.Config    `yaml:"slack"`
	WhatsApp whatsapp.Config `yaml:"whatsapp"`
	Web      web.Config      `yaml:"web"`
}

// MediaModel names a model of llm.providers for a media job.
type MediaModel struct {
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
}

type Agent struct {
	MaxConcurrent int      `yaml:"max_concurrent"`
	MaxMessages   int      `yaml:"max_messages"`
	MaxIterations int      `yaml:"max_iterations"`
	RunTimeout    Duration `yaml:"run_timeout"`
	Context       Context  `yaml:"context"`
	// MaxCostPerDay (USD) stops a group's runs for the rest of the day
	// once its model calls cost that much; 0 is no limit.
	MaxCostPerDay float64 `yaml:"max_cost_per_day"`
	// Retention is how long runs, transcripts, model attempts and notes
	// are kept.
	Retention  Duration             `yaml:"retention"`
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`
}

// Context is the conversation a run sees besides the new messages: the
// group's recent, already handled messages (its own answers included).
type Context struct {
	// Messages and MaxAge bound the handled messages shown again.
	Messages int      `yaml:"messages"`
	MaxAge   Duration `yaml:"max_age"`
	// MaxTokens is the estimated size past which older history is
	// summarised (once; the summary is reused). A model with a smaller
	// context window gets a quarter of its window instead.
	MaxTokens int `yaml:"max_tokens"`
}

type MCPServer struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	// Tools is the allow-list of tool names the agent may call; empty allows none.
	Tools []string `yaml:"tools"`
}

type MCP struct {
	HTTP MCPHTTP `yaml:"http"`
}

type MCPHTTP struct {
	Listen string     `yaml:"listen"`
	Tokens []MCPToken `yaml:"tokens"`
}

// MCPToken maps one bearer token to the single group it may reach.
type MCPToken struct {
	Token string `yaml:"token"`
	Group string `yaml:"group"`
}

type Group struct {
	Folder  string `yaml:"folder"`
	Name    string `yaml:"name"`
	Chat    string `yaml:"chat"`
	Trigger string `yaml:"trigger"`
	// RequiresTrigger is a pointer so that an absent key means "true".
	RequiresTrigger *bool `yaml:"requires_trigger"`
	Main            bool  `yaml:"main"`
}

// NeedsTrigger reports whether messages must start with the trigger to
// start a run; the main group and requires_trigger:false groups answer all.
func (g Group) NeedsTrigger() bool {
	if g.Main {
		return false
	}
	return g.RequiresTrigger == nil || *g.RequiresTrigger
}

// Defaults returns a Config holding every default, the base that a file is
// decoded over.
func Defaults() *Config {
	return &Config{
		AssistantName: "Andy",
		DataDir:       "./data",
		GroupsDir:     "./groups",
		LogLevel:      "info",
		Media: Media{
			// RefTTL zero: each network's own lifetime (mediaregistry.DefaultRefTTL).
			CacheTTL:            Duration(24 * time.Hour),
			InlineMaxBytes:      mcp.DefaultInlineMaxBytes,
			MaxDownloadBytes:    media.DefaultMaxDownloadBytes,
			MaxDiskBytes:        diskbudget.DefaultMaxBytes,
			SweepInterval:       Duration(time.Minute),
			DownloadTimeout:     Duration(media.DefaultDownloadTimeout),
			DownloadIdleTimeout: Duration(media.DefaultDownloadIdleTimeout),
			DownloadsPerGroup:   media.DefaultDownloadsPerGroup,
			Store:               MediaStore{Type: StoreLocal},
			LinkTTL:             Duration(media.DefaultLinkTTL),
			Parse: MediaParse{MemoryBytes: box.DefaultMemory, CPU: Duration(box.DefaultCPU), Timeout: Duration(box.DefaultTimeout),
				TotalMemoryBytes: box.DefaultTotalMemory},
			Generation: Generation{Video: VideoGen{Timeout: Duration(media.DefaultVideoTimeout), MaxJobsPerGroup: media.DefaultVideoJobsPerGroup}},
		},
		Channels: Channels{
			Telegram: telegram.DefaultConfig(),
			Slack:    slack.DefaultConfig(),
			WhatsApp: whatsapp.DefaultConfig(),
			Web:      web.DefaultConfig(),
		},
		LLM: providers.DefaultConfig(),
		Agent: Agent{
			MaxConcurrent: 4,
			MaxMessages:   30,
			MaxIterations: 12,
			RunTimeout:    Duration(5 * time.Minute),
			Context:       Context{Messages: 50, MaxAge: Duration(24 * time.Hour), MaxTokens: 16000},
			Retention:     Duration(90 * 24 * time.Hour),
		},
		MCP:       MCP{HTTP: MCPHTTP{Listen: "127.0.0.1:8765"}},
		Scheduler: defaultScheduler(),
	}
}

// Problem is one thing wrong with a config, located by its key path.
type Problem struct {
	Path string
	Msg  string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// Problems is every problem found in a config; it is an error.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Load reads and validates the config at path. A validation failure is
// returned as Problems (use errors.As) together with the decoded config.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data, os.LookupEnv)
	if cfg != nil {
		cfg.resolvePaths(filepath.Dir(path))
	}
	return cfg, err
}

// resolvePaths makes relative data_dir and groups_dir relative to the
// config file, not to whatever directory botd was started from: Claude
// Desktop starts `botd mcp` from its own working directory, and it must
// find the same data/ipc folder as `botd run`.
func (c *Config) resolvePaths(base string) {
	for _, p := range []*string{&c.DataDir, &c.GroupsDir, &c.Channels.WhatsApp.SessionDB} {
		if *p != "" && !filepath.IsAbs(*p) {
			if abs, err := filepath.Abs(filepath.Join(base, *p)); err == nil {
				*p = abs
			}
		}
	}
}

// Parse decodes YAML with ${VAR} / ${VAR:-default} expanded through lookup,
// applies defaults and validates. Expansion happens on scalar values after
// parsing, so an environment value can never inject YAML structure.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	cfg := Defaults()
	cfg.secretVars = map[string][]string{}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			// An empty file is all defaults.
			return cfg, cfg.Validate()
		}
		return nil, Problems{{Msg: "invalid YAML: " + err.Error()}}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	var probs Problems
	probs = append(probs, expand(root, "", lookup, cfg.secretVars)...)
	probs = append(probs, checkKeys(root, "", typeOfConfig)...)
	if err := root.Decode(cfg); err != nil {
		return cfg, append(probs, Problem{Msg: err.Error()})
	}
	var vp Problems
	if errors.As(cfg.Validate(), &vp) {
		probs = append(probs, vp...)
	}
	if len(probs) > 0 {
		return cfg, probs
	}
	return cfg, nil
}

// EnvHint names the environment variables a key's raw value referred to, for
// messages like "set TELEGRAM_BOT_TOKEN".
func (c *Config) EnvHint(path string) string {
	vars := c.secretVars[path]
	if len(vars) == 0 {
		return ""
	}
	return strings.Join(vars, ", ")
}
