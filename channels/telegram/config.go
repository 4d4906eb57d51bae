package telegram

import (
	"cmp"
	"path/filepath"

	"github.com/botd-dev/botd/internal/settings"
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
func DefaultConfig() Config { return Config{}.withDefaults() }

// withDefaults fills what the section left empty: the one home of its
// defaults, for the file and for New.
func (c Config) withDefaults() Config {
	c.APIURL = cmp.Or(c.APIURL, DefaultAPIURL)
	if c.MaxDownloadBytes <= 0 {
		c.MaxDownloadBytes = DefaultMaxDownload
	}
	return c
}

// Validate reports every problem of the section as settings.Problems,
// keyed by their paths below channels.telegram.
func (c Config) Validate() error {
	const sec = "channels.telegram."
	var ps settings.Problems
	ps.CheckURL(sec+"api_url", c.APIURL)
	if c.Enabled && c.Token == "" {
		ps.AddSecret(sec+"token", "required when the channel is enabled", settings.SetHint)
	}
	if c.MaxDownloadBytes <= 0 {
		ps.Add(sec+"max_download_bytes", "must be positive")
	}
	if c.LocalFilesDir != "" && !filepath.IsAbs(c.LocalFilesDir) {
		ps.Add(sec+"local_files_dir", "must be an absolute path (the local Bot API server's --dir)")
	}
	if w := c.Webhook; w != nil {
		if w.Listen == "" {
			ps.Add(sec+"webhook.listen", "required for webhook mode (e.g. 127.0.0.1:8443)")
		}
		ps.CheckURL(sec+"webhook.url", w.URL)
		if w.Secret == "" {
			ps.Add(sec+"webhook.secret", "required for webhook mode, so forged updates are rejected")
		}
	}
	return ps.Err()
}
