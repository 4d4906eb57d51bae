package agent

import (
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/tools"
)

// Config is the agent section of botd's config file.
type Config struct {
	MaxConcurrent int               `yaml:"max_concurrent"`
	MaxMessages   int               `yaml:"max_messages"`
	MaxIterations int               `yaml:"max_iterations"`
	RunTimeout    settings.Duration `yaml:"run_timeout"`
	Context       ContextConfig     `yaml:"context"`
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

// MCPServer is a further stdio MCP server of agent.mcp_servers.
type MCPServer struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	// Tools is the allow-list of tool names the agent may call; empty allows none.
	Tools []string `yaml:"tools"`
}

// DefaultAssistantName is assistant_name when the config names none.
const DefaultAssistantName = "Andy"

// DefaultConfig is the section a config file is decoded over, and the
// values New takes for zero Options.
func DefaultConfig() Config {
	return Config{
		MaxConcurrent: 4,
		MaxMessages:   30,
		MaxIterations: 12,
		RunTimeout:    settings.Duration(5 * time.Minute),
		Context:       ContextConfig{Messages: 50, MaxAge: settings.Duration(24 * time.Hour), MaxTokens: 16000},
		Retention:     settings.Duration(90 * 24 * time.Hour),
	}
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
		if s.Command == "" {
			ps.Add("agent.mcp_servers."+name+".command", "must not be empty")
		}
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
