package agent

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/botd-dev/botd/agent/mcpremote"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/tools"
)

// Config is the agent section of botd's config file.
type Config struct {
	MaxConcurrent int `yaml:"max_concurrent"`
	MaxMessages   int `yaml:"max_messages"`
	MaxIterations int `yaml:"max_iterations"`
	// LazyTools offers a run the core tools and an index of the rest,
	// whose schemas the model asks for (load_tools); false offers every
	// schema from the first turn.
	LazyTools  bool              `yaml:"lazy_tools"`
	RunTimeout settings.Duration `yaml:"run_timeout"`
	Context    ContextConfig     `yaml:"context"`
	// MaxCostPerDay (USD) stops a group's runs for the rest of the day
	// once its model calls cost that much; 0 is no limit.
	MaxCostPerDay float64 `yaml:"max_cost_per_day"`
	// Retention is how long runs, transcripts, model attempts and notes
	// are kept.
	Retention  settings.Duration    `yaml:"retention"`
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`
}

// ContextConfig is agent.context: the conversation a run sees besides the
// new messages, the group's recent, already handled messages (its own
// answers included).
type ContextConfig struct {
	// Messages and MaxAge bound the handled messages shown again.
	Messages int               `yaml:"messages"`
	MaxAge   settings.Duration `yaml:"max_age"`
	// MaxTokens is the estimated size past which older history is
	// summarised (once; the summary is reused). A model with a smaller
	// context window gets a quarter of its window instead.
	MaxTokens int `yaml:"max_tokens"`
}

// MCPServer is a further MCP server of agent.mcp_servers: a child process
// over stdio (Command) or a remote server over Streamable HTTP (URL).
type MCPServer struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	// URL is a remote server's Streamable HTTP endpoint, instead of
	// Command. It goes through the SSRF guard (netguard).
	URL string `yaml:"url"`
	// Headers go with every request to URL (Authorization: "Bearer
	// ${TOKEN}", the token from the environment); never logged.
	Headers map[string]string `yaml:"headers"`
	// AllowPrivate lets URL be on this machine or the local network (a
	// Home Assistant on the LAN), given as an address.
	AllowPrivate bool `yaml:"allow_private"`
	// OAuth gets the bearer token with OAuth 2.1 client credentials.
	OAuth *MCPOAuth `yaml:"oauth"`
	// Tools is the allow-list of tool names the agent may call; empty allows none.
	Tools []string `yaml:"tools"`
	// Groups are the group folders offered the server's tools; empty
	// offers them to every group.
	Groups []string `yaml:"groups"`
}

// MCPOAuth is a remote server's OAuth 2.1 sign-in. Flow
// client_credentials (the default): botd asks TokenURL for an access
// token, keeps it in the data folder (0600) and asks again before it
// expires. Flow authorization_code: a person signs botd in once with
// botd mcp-login (PKCE; the authorization server found from the server's
// metadata), and the kept token is refreshed.
type MCPOAuth struct {
	Flow         string   `yaml:"flow"`
	RedirectURI  string   `yaml:"redirect_uri"`
	TokenURL     string   `yaml:"token_url"`
	ClientID     string   `yaml:"client_id"`
	ClientSecret string   `yaml:"client_secret"`
	Scopes       []string `yaml:"scopes"`
}

// DefaultAssistantName is assistant_name when the config names none
// (package channels holds it: the name a chat addresses).
const DefaultAssistantName = channels.DefaultAssistantName

// DefaultConfig is the section a config file is decoded over, and the
// values New takes for zero Options.
func DefaultConfig() Config {
	return Config{
		MaxConcurrent: 4,
		MaxMessages:   30,
		MaxIterations: 12,
		LazyTools:     true,
		RunTimeout:    settings.Duration(5 * time.Minute),
		Context:       ContextConfig{Messages: 50, MaxAge: settings.Duration(24 * time.Hour), MaxTokens: 16000},
		Retention:     settings.Duration(90 * 24 * time.Hour),
	}
}

// The section registers itself: package config decodes agent through
// Config without importing this package. The groups' tool allow-lists are
// checked here, against the tools the agent knows.
func init() {
	settings.Register("agent", DefaultConfig, func(c *Config, s settings.Shared) error {
		ps := settings.Of(c.Validate())
		for i, names := range s.GroupTools {
			for j, name := range names {
				if err := c.CheckTool(name); err != nil {
					ps.Add(fmt.Sprintf("groups[%d].tools[%d]", i, j), "%v", err)
				}
			}
		}
		return ps.Err()
	})
}

// Validate reports every problem of the section with its key path.
func (c Config) Validate() error {
	var ps settings.Problems
	if c.MaxConcurrent < 1 {
		ps.Add("agent.max_concurrent", "must be at least 1")
	}
	if c.Context.Messages < 0 {
		ps.Add("agent.context.messages", "must not be negative (0 shows no earlier messages)")
	}
	if c.Context.MaxAge <= 0 {
		ps.Add("agent.context.max_age", "must be positive")
	}
	if c.Context.MaxTokens < 1000 {
		ps.Add("agent.context.max_tokens", "must be at least 1000")
	}
	if c.Retention.D() < 24*time.Hour {
		ps.Add("agent.retention", "must be at least 24h (runs are billed and shown by day)")
	}
	if c.MaxCostPerDay < 0 {
		ps.Add("agent.max_cost_per_day", "must not be negative (0 is no limit)")
	}
	if c.MaxMessages < 1 {
		ps.Add("agent.max_messages", "must be at least 1")
	}
	if c.MaxIterations < 1 {
		ps.Add("agent.max_iterations", "must be at least 1")
	}
	if c.RunTimeout <= 0 {
		ps.Add("agent.run_timeout", "must be positive")
	}
	for name, s := range c.MCPServers {
		if name == "botd" {
			ps.Add("agent.mcp_servers.botd", "the name botd is reserved for the built-in media server")
		}
		if !validServerName(name) {
			ps.Add("agent.mcp_servers."+name, "a server's name is letters, digits, _ and - (it prefixes its tools' names, which models accept only so)")
		}
		validateServer(&ps, "agent.mcp_servers."+name, s)
	}
	return ps.Err()
}

// KnownTool reports whether a run can be offered a tool of that name:
// one of botd's own, or <server>__<tool> of one of agent.mcp_servers (its
// tools are known only once it runs). groups[].tools is checked by it.
func (c Config) KnownTool(name string) bool {
	if server, _, extra := strings.Cut(name, "__"); extra {
		_, ok := c.MCPServers[server]
		return ok
	}
	_, ok := tools.Lookup(name)
	return ok
}

// CheckTool is why a group's allow-list cannot name a tool (nil: it
// can), the sentence config check and the dashboard say.
func (c Config) CheckTool(name string) error {
	if !c.KnownTool(name) {
		return fmt.Errorf("unknown tool %q (botd's own by name, e.g. fetch_url; an agent.mcp_servers server's as <server>__<tool>)", name)
	}
	return nil
}

// validateServer checks one agent.mcp_servers entry: a command or a URL,
// and the keys that go with each.
func validateServer(ps *settings.Problems, key string, s MCPServer) {
	switch {
	case s.Command == "" && s.URL == "":
		ps.Add(key+".command", "must not be empty (or give url for a remote server)")
	case s.Command != "" && s.URL != "":
		ps.Add(key+".url", "give either command (a server botd starts) or url (a remote server), not both")
	case s.URL != "":
		if err := mcpremote.Check(s.URL, s.AllowPrivate); err != nil {
			ps.Add(key+".url", "%s", err)
		}
		if len(s.Args) > 0 || len(s.Env) > 0 {
			ps.Add(key, "args and env are for a command; a remote server (url) takes headers")
		}
	default:
		if len(s.Headers) > 0 || s.OAuth != nil || s.AllowPrivate {
			ps.Add(key, "headers, oauth and allow_private are for a remote server (url), not a command")
		}
	}
	for h, v := range s.Headers {
		if !validHeaderName(h) {
			ps.Add(key+".headers", "%q is not a header name", h)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			// The value is a secret: named by its header only.
			ps.Add(key+".headers."+h, "the value holds a line break or NUL")
		}
	}
	if o := s.OAuth; o != nil {
		switch o.Flow {
		case "", FlowClientCredentials:
			if o.TokenURL == "" {
				ps.Add(key+".oauth.token_url", "must not be empty")
			} else if err := mcpremote.Check(o.TokenURL, s.AllowPrivate); err != nil {
				ps.Add(key+".oauth.token_url", "%s", err)
			}
			if o.ClientSecret == "" {
				ps.Add(key+".oauth.client_secret", "must not be empty")
			}
			if o.RedirectURI != "" {
				ps.Add(key+".oauth.redirect_uri", "is for flow authorization_code")
			}
		case FlowAuthorizationCode:
			if o.TokenURL != "" {
				ps.Add(key+".oauth.token_url", "is for flow client_credentials (authorization_code finds the endpoints in the server's metadata)")
			}
			if err := checkRedirect(o.RedirectURI); err != "" {
				ps.Add(key+".oauth.redirect_uri", "%s", err)
			}
		default:
			ps.Add(key+".oauth.flow", "%q is not a flow botd speaks (client_credentials or authorization_code)", o.Flow)
		}
		if o.ClientID == "" {
			ps.Add(key+".oauth.client_id", "must not be empty")
		}
		for h := range s.Headers {
			if strings.EqualFold(h, "Authorization") {
				ps.Add(key+".headers", "give either an Authorization header or oauth, not both")
			}
		}
	}
	for _, g := range s.Groups {
		if strings.TrimSpace(g) == "" {
			ps.Add(key+".groups", "an empty group name (leave the list empty to offer the server to every group)")
		}
	}
}

// validServerName is a name that can prefix a tool's name.
func validServerName(n string) bool {
	if n == "" || len(n) > 32 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validHeaderName is an HTTP token (RFC 9110).
func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// The OAuth flows of agent.mcp_servers.<name>.oauth.flow.
const (
	FlowClientCredentials = "client_credentials"
	FlowAuthorizationCode = "authorization_code"
)

// checkRedirect is why an authorization code redirect URI will not do:
// botd listens on it itself, on loopback, for the person's browser.
func checkRedirect(raw string) string {
	if raw == "" {
		return "must not be empty (e.g. http://127.0.0.1:8976/callback, registered with the authorization server)"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || (u.Hostname() != "127.0.0.1" && u.Hostname() != "::1" && u.Hostname() != "localhost") || u.Port() == "" {
		return "must be http://127.0.0.1:PORT/… (botd mcp-login listens there for the browser's answer)"
	}
	return ""
}
