package telegram

import (
	"path/filepath"

	"github.com/botd-dev/botd/channels"
)

const (
	// DefaultAPIURL is the cloud Bot API; channels.telegram.api_url points
	// elsewhere for a local Bot API server, a proxy or a fake.
	DefaultAPIURL = "https://api.telegram.org"
	// DefaultMaxDownload is the cloud Bot API's getFile limit.
	DefaultMaxDownload = 20 << 20
)

// Config is channels.telegram in botd's config file.
type Config struct {
	Enabled bool   `yaml:"enabled"`
	Token   string `yaml:"token"`
	APIURL  string `yaml:"api_url"`
	// MaxDownloadBytes is the Bot API's getFile limit: 20 MB on the cloud
	// API, larger on a local Bot API server.
	MaxDownloadBytes int64 `yaml:"max_download_bytes"`
	// LocalFilesDir is the --dir of a local Bot API server run with
	// --local, at the same path on botd's machine. Such a server answers
	// getFile with a path on its disk; botd reads it only inside this
	// directory. Empty: no file_path is ever read from disk.
	LocalFilesDir string   `yaml:"local_files_dir"`
	Webhook       *Webhook `yaml:"webhook"`
}

// Webhook is channels.telegram.webhook: receive updates over HTTPS
// instead of long polling.
type Webhook struct {
	Listen string `yaml:"listen"`
	URL    string `yaml:"url"`
	Secret string `yaml:"secret"`
}

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config {
	return Config{APIURL: DefaultAPIURL, MaxDownloadBytes: DefaultMaxDownload}
}

// Validate reports every problem of the section, keyed below
// channels.telegram.
func (c Config) Validate() []channels.ConfigProblem {
	var ps []channels.ConfigProblem
	add := func(key, msg string, hint bool) {
		ps = append(ps, channels.ConfigProblem{Key: key, Msg: msg, EnvHint: hint})
	}
	channels.CheckURL(&ps, "api_url", c.APIURL)
	if c.Enabled && c.Token == "" {
		add("token", "required when the channel is enabled", true)
	}
	if c.MaxDownloadBytes <= 0 {
		add("max_download_bytes", "must be positive", false)
	}
	if c.LocalFilesDir != "" && !filepath.IsAbs(c.LocalFilesDir) {
		add("local_files_dir", "must be an absolute path (the local Bot API server's --dir)", false)
	}
	if w := c.Webhook; w != nil {
		if w.Listen == "" {
			add("webhook.listen", "required for webhook mode (e.g. 127.0.0.1:8443)", false)
		}
		channels.CheckURL(&ps, "webhook.url", w.URL)
		if w.Secret == "" {
			add("webhook.secret", "required for webhook mode, so forged updates are rejected", false)
		}
	}
	return ps
}
