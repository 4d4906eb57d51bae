package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/mediaregistry/s3store"
)

// Validate reports every structural problem. Missing secrets of enabled
// channels are problems too; secrets of unused providers are not, so the
// example config passes with no environment set.
func (c *Config) Validate() error {
	var ps Problems
	add := func(path, format string, args ...any) {
		ps = append(ps, Problem{path, fmt.Sprintf(format, args...)})
	}
	if strings.TrimSpace(c.AssistantName) == "" {
		add("assistant_name", "must not be empty")
	}
	if c.DataDir == "" {
		add("data_dir", "must not be empty")
	}
	if c.GroupsDir == "" {
		add("groups_dir", "must not be empty")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		add("log_level", "must be one of debug, info, warn, error")
	}

	m := c.Media
	if m.RefTTL < 0 {
		add("media.ref_ttl", "must not be negative (leave it unset for each network's own lifetime)")
	}
	if m.CacheTTL <= 0 {
		add("media.cache_ttl", "must be positive")
	}
	if m.SweepInterval <= 0 {
		add("media.sweep_interval", "must be positive")
	}
	if m.DownloadTimeout <= 0 {
		add("media.download_timeout", "must be positive")
	}
	if m.DownloadIdleTimeout <= 0 {
		add("media.download_idle_timeout", "must be positive")
	} else if m.DownloadIdleTimeout > m.DownloadTimeout {
		add("media.download_idle_timeout", "must not exceed media.download_timeout")
	}
	if m.DownloadsPerGroup <= 0 || m.DownloadsPerGroup > 64 {
		add("media.downloads_per_group", "must be between 1 and 64")
	}
	if m.InlineMaxBytes <= 0 {
		add("media.inline_max_bytes", "must be positive")
	}
	if m.MaxDownloadBytes <= 0 {
		add("media.max_download_bytes", "must be positive")
	} else if m.InlineMaxBytes > m.MaxDownloadBytes {
		add("media.inline_max_bytes", "must not exceed media.max_download_bytes")
	}
	c.checkMediaModel(&ps, "media.describe", m.Describe)
	c.checkMediaModel(&ps, "media.transcription", m.Transcription)
	if p, ok := c.LLM.Providers[m.Transcription.Provider]; ok && p.Type == "anthropic" {
		add("media.transcription.provider", "%q is an anthropic provider, and anthropic has no transcription API; name an openai-compatible or gemini provider", m.Transcription.Provider)
	}
	c.checkGeneration(&ps, m.Generation)
	if m.MaxDiskBytes <= 0 {
		add("media.max_disk_bytes", "must be positive")
	} else if m.MaxDownloadBytes > 0 && m.MaxDiskBytes < 2*m.MaxDownloadBytes {
		// A fetched file is stored twice: in the cache and as the group's
		// own copy.
		add("media.max_disk_bytes", "must be at least twice media.max_download_bytes (%d): a fetched file is kept in the cache and in the group's folder", m.MaxDownloadBytes)
	}
	if m.GroupShare < 0 || (m.MaxDiskBytes > 0 && m.GroupShare > m.MaxDiskBytes) {
		add("media.group_share", "must be between 0 (an equal part of media.max_disk_bytes for each group) and media.max_disk_bytes (%d)", m.MaxDiskBytes)
	}

	c.checkMediaStore(&ps)
	if pa := m.Parse; pa.MemoryBytes < minParseMemory {
		add("media.parse.memory_bytes", "must be at least %d (16 MB): below that no parser starts", minParseMemory)
	} else if pa.TotalMemoryBytes < pa.MemoryBytes {
		add("media.parse.total_memory_bytes", "must be at least media.parse.memory_bytes (%d): one file must fit", pa.MemoryBytes)
	}
	if m.Parse.CPU.D() < time.Second {
		add("media.parse.cpu", "must be at least 1s")
	}
	if m.Parse.Timeout.D() < time.Second {
		add("media.parse.timeout", "must be at least 1s")
	}
	if m.LinkTTL <= 0 || m.LinkTTL.D() > 7*24*time.Hour {
		add("media.link_ttl", "must be positive and at most 168h (S3 presigned URLs last a week at most)")
	}

	ps = append(ps, c.channelProblems("channels.telegram", c.Channels.Telegram.Validate())...)
	ps = append(ps, c.channelProblems("channels.slack", c.Channels.Slack.Validate())...)
	ps = append(ps, c.channelProblems("channels.whatsapp", c.Channels.WhatsApp.Validate())...)
	ps = append(ps, c.channelProblems("channels.web", c.Channels.Web.Validate())...)

	for _, p := range settings.Of(c.LLM.Validate()) {
		ps = append(ps, Problem{p.Path, p.Msg})
	}

	a := c.Agent
	if a.MaxConcurrent < 1 {
		add("agent.max_concurrent", "must be at least 1")
	}
	if a.Context.Messages < 0 {
		add("agent.context.messages", "must not be negative (0 shows no earlier messages)")
	}
	if a.Context.MaxAge <= 0 {
		add("agent.context.max_age", "must be positive")
	}
	if a.Context.MaxTokens < 1000 {
		add("agent.context.max_tokens", "must be at least 1000")
	}
	if a.Retention.D() < 24*time.Hour {
		add("agent.retention", "must be at least 24h (runs are billed and shown by day)")
	}
	if a.MaxCostPerDay < 0 {
		add("agent.max_cost_per_day", "must not be negative (0 is no limit)")
	}
	if a.MaxMessages < 1 {
		add("agent.max_messages", "must be at least 1")
	}
	if a.MaxIterations < 1 {
		add("agent.max_iterations", "must be at least 1")
	}
	if a.RunTimeout <= 0 {
		add("agent.run_timeout", "must be positive")
	}
	for name, s := range a.MCPServers {
		if name == "botd" {
			add("agent.mcp_servers.botd", "the name botd is reserved for the built-in media server")
		}
		if s.Command == "" {
			add("agent.mcp_servers."+name+".command", "must not be empty")
		}
	}

	folders := map[string]int{}
	chats := map[string]int{}
	mains := 0
	for i, g := range c.Groups {
		path := "groups[" + strconv.Itoa(i) + "]"
		if err := groups.ValidateFolder(g.Folder); err != nil {
			add(path+".folder", "%v", err)
		} else if j, dup := folders[g.Folder]; dup {
			add(path+".folder", "%q is already used by groups[%d]", g.Folder, j)
		} else {
			folders[g.Folder] = i
		}
		if err := groups.ValidateChatID(g.Chat); err != nil {
			add(path+".chat", "%v", err)
		} else if room, ok := strings.CutPrefix(g.Chat, web.Name+":"); ok && web.ValidRoom(room) != nil {
			add(path+".chat", "%v", web.ValidRoom(room))
		} else if j, dup := chats[g.Chat]; dup {
			add(path+".chat", "%q is already registered by groups[%d]", g.Chat, j)
		} else {
			chats[g.Chat] = i
		}
		if g.Trigger != "" && strings.TrimSpace(g.Trigger) != g.Trigger {
			add(path+".trigger", "must not start or end with spaces")
		}
		if g.Main {
			mains++
			if mains > 1 {
				add(path+".main", "only one group may be the main group")
			}
		}
	}
	tokens := map[string]int{}
	for i, t := range c.MCP.HTTP.Tokens {
		path := "mcp.http.tokens[" + strconv.Itoa(i) + "]"
		if len(t.Token) < 16 {
			add(path+".token", "must be at least 16 characters%s", c.setHint(path+".token"))
		}
		// A token reaches one group; the same token twice would silently
		// pick one of them.
		if j, dup := tokens[t.Token]; dup && t.Token != "" {
			add(path+".token", "is the same as mcp.http.tokens[%d].token; each token must be unique", j)
		}
		tokens[t.Token] = i
		if _, ok := folders[t.Group]; !ok {
			add(path+".group", "unknown group folder %q", t.Group)
		}
	}
	if c.MCP.HTTP.Listen != "" {
		if _, _, err := net.SplitHostPort(c.MCP.HTTP.Listen); err != nil {
			add("mcp.http.listen", "must be host:port (e.g. 127.0.0.1:8765)")
		}
	}
	ps = append(ps, c.schedulerProblems()...)
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// channelProblems places a channel's own problems under its section and
// names the environment variable a missing secret was meant to come from.
func (c *Config) channelProblems(section string, cps []channels.ConfigProblem) Problems {
	var ps Problems
	for _, p := range cps {
		path := section + "." + p.Key
		msg := p.Msg
		if p.EnvHint {
			msg += c.setHint(path)
		}
		ps = append(ps, Problem{path, msg})
	}
	return ps
}

func (c *Config) setHint(path string) string {
	if h := c.EnvHint(path); h != "" {
		return " (set " + h + ")"
	}
	return ""
}

func checkURL(ps *Problems, path, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		*ps = append(*ps, Problem{path, fmt.Sprintf("must be an http(s) URL, got %q", raw)})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// GroupList converts the configured groups for the groups package.
func (c *Config) GroupList() []groups.Group {
	out := make([]groups.Group, len(c.Groups))
	for i, g := range c.Groups {
		out[i] = groups.Group{
			Folder:          g.Folder,
			Name:            g.Name,
			Chat:            g.Chat,
			Trigger:         g.Trigger,
			RequiresTrigger: g.NeedsTrigger(),
			Main:            g.Main,
		}
	}
	return out
}

// RunReadiness reports what stops `botd run` from doing anything useful:
// no channel enabled, or no usable LLM model. Each line names the keys or
// environment variables to set. With the web channel on, a missing model
// does not stop the run: the pages say what to set (MissingLLM), so a
// fresh config can be opened and read before any key exists.
func (c *Config) RunReadiness() []string {
	var out []string
	ch := c.Channels
	if !ch.Telegram.Enabled && !ch.Slack.Enabled && !ch.WhatsApp.Enabled && !ch.Web.Enabled {
		out = append(out, "no channel is enabled: set channels.web.enabled: true for the local web rooms, "+
			"or channels.telegram.enabled: true and TELEGRAM_BOT_TOKEN, "+
			"or channels.slack.enabled: true with SLACK_BOT_TOKEN and SLACK_APP_TOKEN, "+
			"or channels.whatsapp.enabled: true and run `botd whatsapp login`")
	}
	if msg := c.MissingLLM(); msg != "" && !ch.Web.Enabled {
		out = append(out, msg)
	}
	return out
}

// MissingLLM says why no model can answer and what to set, with key
// paths, or "" when one can.
func (c *Config) MissingLLM() string {
	models := c.LLM.Models()
	if len(models) == 0 {
		return "no LLM model is configured: set llm.model.provider and llm.model.name"
	}
	if len(c.LLM.UsableModels()) > 0 {
		return ""
	}
	var keys []string
	seen := map[string]bool{}
	for _, m := range models {
		if _, ok := c.LLM.Providers[m.Provider]; !ok {
			keys = append(keys, fmt.Sprintf("provider %q is not defined under llm.providers", m.Provider))
			continue
		}
		if !seen[m.Provider] {
			seen[m.Provider] = true
			path := "llm.providers." + m.Provider + ".api_key"
			keys = append(keys, path+" is empty"+c.setHint(path))
		}
	}
	if len(keys) == 1 {
		return "no API key for LLM provider " + strconv.Quote(models[0].Provider) + ": " + keys[0]
	}
	return "no API key for any LLM model: " + strings.Join(keys, "; ")
}

// LLMSetup tells a person, in one sentence, what to set so that a model
// can answer: the environment variables the chain's API keys come from,
// and those of an OpenAI-compatible base URL (a local server needs no
// key). Key paths stand in for values written into the file itself.
func (c *Config) LLMSetup() string {
	var keys, local []string
	seen := map[string]bool{}
	for i, m := range c.LLM.Models() {
		p, ok := c.LLM.Providers[m.Provider]
		if !ok || seen[m.Provider] {
			continue
		}
		seen[m.Provider] = true
		path := "llm.providers." + m.Provider
		if h := c.EnvHint(path + ".api_key"); h != "" {
			keys = append(keys, h)
		} else {
			keys = append(keys, path+".api_key")
		}
		if p.Type != "openai" {
			continue
		}
		if h := c.EnvHint(path + ".base_url"); h != "" {
			namePath := "llm.model.name"
			if i > 0 {
				namePath = "llm.fallback[" + strconv.Itoa(i-1) + "].name"
			}
			if n := c.EnvHint(namePath); n != "" {
				h += " (and " + n + ")"
			}
			local = append(local, h)
		}
	}
	if len(keys) == 0 {
		return "Configure llm.model and llm.providers, then restart botd."
	}
	s := "Set " + orList(keys)
	if len(local) > 0 {
		s += ", or " + orList(local) + " for a local OpenAI-compatible server (Ollama, llama.cpp, vLLM)"
	}
	return s + ", then restart botd."
}

// orList joins "a", "a or b", "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// checkMediaModel checks a {provider, model} media job: both or neither,
// and the provider must exist.
func (c *Config) checkMediaModel(ps *Problems, path string, m MediaModel) {
	switch {
	case m.Provider == "" && m.Model == "":
	case m.Provider == "":
		*ps = append(*ps, Problem{Path: path + ".provider", Msg: "must name a provider of llm.providers"})
	case m.Model == "":
		*ps = append(*ps, Problem{Path: path + ".model", Msg: "must not be empty"})
	default:
		if _, ok := c.LLM.Providers[m.Provider]; !ok {
			*ps = append(*ps, Problem{Path: path + ".provider", Msg: fmt.Sprintf("unknown provider %q (not under llm.providers)", m.Provider)})
		}
	}
}

// checkMediaStore checks media.store: the type, and for s3 every setting
// the bucket needs. Whether the bucket answers is `botd config check`'s
// business (it needs the network).
func (c *Config) checkMediaStore(ps *Problems) {
	st := c.Media.Store
	add := func(path, format string, args ...any) {
		*ps = append(*ps, Problem{"media.store." + path, fmt.Sprintf(format, args...)})
	}
	switch st.Type {
	case StoreLocal:
		return
	case StoreS3:
	default:
		add("type", "must be local or s3")
		return
	}
	if st.Endpoint == "" {
		add("endpoint", "is required for type s3 (e.g. https://s3.eu-central-1.amazonaws.com or http://127.0.0.1:9000)")
	} else if _, err := s3store.ParseEndpoint(st.Endpoint); err != nil {
		add("endpoint", "%s", strings.TrimPrefix(err.Error(), "s3 store: "))
	}
	if st.Bucket == "" {
		add("bucket", "is required for type s3")
	}
	if st.PublicEndpoint != "" {
		if _, err := s3store.ParseEndpoint(st.PublicEndpoint); err != nil {
			add("public_endpoint", "%s", strings.TrimPrefix(err.Error(), "s3 store: "))
		}
	}
	for _, k := range []struct{ path, v string }{{"access_key", st.AccessKey}, {"secret_key", st.SecretKey}} {
		if k.v != "" {
			continue
		}
		if env := c.EnvHint("media.store." + k.path); env != "" {
			add(k.path, "is required for type s3: set %s", env)
		} else {
			add(k.path, "is required for type s3")
		}
	}
}

// checkGeneration checks media.generation: each model like any media job,
// plus the API its provider's type offers.
func (c *Config) checkGeneration(ps *Problems, g Generation) {
	add := func(path, format string, args ...any) {
		*ps = append(*ps, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	check := func(path string, m MediaModel, price float64, types ...string) {
		c.checkMediaModel(ps, path, m)
		if p, ok := c.LLM.Providers[m.Provider]; ok && !contains(types, p.Type) {
			add(path+".provider", "%q is a provider of type %s; this needs one of type %s", m.Provider, p.Type, strings.Join(types, " or "))
		}
		if price < 0 {
			add(path+".price", "must not be negative")
		}
	}
	check("media.generation.image", g.Image.MediaModel(), g.Image.Price, "openai", "gemini")
	check("media.generation.speech", g.Speech.MediaModel(), g.Speech.Price, "openai")
	check("media.generation.video", g.Video.MediaModel(), g.Video.Price, "openai")
	if len(g.Speech.Voice) > 64 {
		add("media.generation.speech.voice", "must be at most 64 characters")
	}
	if g.Image.Voice != "" {
		add("media.generation.image.voice", "only speech has a voice")
	}
	if g.Video.Timeout.D() < time.Minute || g.Video.Timeout.D() > 24*time.Hour {
		add("media.generation.video.timeout", "must be between 1m and 24h")
	}
	if g.Video.MaxJobsPerGroup < 1 || g.Video.MaxJobsPerGroup > 20 {
		add("media.generation.video.max_jobs_per_group", "must be between 1 and 20")
	}
}

// minParseMemory is the least media.parse.memory_bytes: what ffmpeg or a
// Go job needs to start at all.
const minParseMemory = 16 << 20
