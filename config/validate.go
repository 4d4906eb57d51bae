package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/settings"
)

// Validate reports every structural problem: the top-level keys, the
// llm and groups sections here, every network's and every registered
// section's through its component's own Validate. Missing secrets of
// enabled channels are problems too; secrets of unused providers are
// not, so the example config passes with no environment set.
func (c *Config) Validate() error {
	var ps Problems
	if strings.TrimSpace(c.AssistantName) == "" {
		ps.Add("assistant_name", "must not be empty")
	}
	if c.DataDir == "" {
		ps.Add("data_dir", "must not be empty")
	}
	if c.GroupsDir == "" {
		ps.Add("groups_dir", "must not be empty")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		ps.Add("log_level", "must be one of debug, info, warn, error")
	}
	if r := c.AckReaction; len(r) > 32 || strings.ContainsFunc(r, unicode.IsSpace) || strings.ContainsAny(r, ":") {
		ps.Add("ack_reaction", "must be one emoji, like \"👀\" (or \"\" for none)")
	}
	providers := map[string]string{}
	for name, p := range c.LLM.Providers {
		providers[name] = p.Type
	}
	folders := map[string]int{}
	errs := []error{
		c.Channels.validateNetworks(),
		c.LLM.Validate(),
		groups.ValidateList(c.Groups, folders),
		c.timezoneProblems().Err(),
	}
	shared := settings.Shared{
		Providers: providers,
		IsGroup:   func(f string) bool { _, ok := folders[f]; return ok },
	}
	for _, g := range c.Groups {
		shared.GroupTools = append(shared.GroupTools, g.Tools)
	}
	// Every registered section's own checks, by key.
	for _, s := range settings.Sections() {
		if v := c.sections[s.Key]; v != nil && s.Validate != nil {
			errs = append(errs, s.Validate(v, shared))
		}
	}
	errs = append(errs, c.groupProblems().Err())
	for _, err := range errs {
		for _, p := range settings.Of(err) {
			if h := c.EnvHint(p.Path); h != "" && p.EnvHint != "" {
				p.Msg += fmt.Sprintf(p.EnvHint, h)
			}
			ps = append(ps, p)
		}
	}
	return ps.Err()
}

// validateNetworks is every network section's own Validate, in name
// order, its problems at their full key paths.
func (c *Channels) validateNetworks() error {
	var ps settings.Problems
	for _, n := range channels.Networks() {
		if nc := c.Networks[n.Name]; nc != nil {
			ps = append(ps, settings.Of(nc.Validate())...)
		}
	}
	return ps.Err()
}

func (c *Config) setHint(path string) string {
	if h := c.EnvHint(path); h != "" {
		return " (set " + h + ")"
	}
	return ""
}

// GroupList converts the configured groups for the groups package.
func (c *Config) GroupList() []groups.Group {
	out := make([]groups.Group, len(c.Groups))
	for i, g := range c.Groups {
		out[i] = g.Group()
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
	on, inApp := false, false
	var setups []string
	for _, n := range channels.Networks() {
		nc := c.Channels.Networks[n.Name]
		if nc == nil {
			continue
		}
		on = on || nc.On()
		inApp = inApp || (n.SetupInApp && nc.On())
		switch {
		case n.Setup == "":
		case n.SetupInApp:
			// The rooms that explain themselves need no account: first.
			setups = append([]string{n.Setup}, setups...)
		default:
			setups = append(setups, n.Setup)
		}
	}
	if !on {
		out = append(out, "no channel is enabled: set "+strings.Join(setups, ", or "))
	}
	if msg := c.MissingLLM(); msg != "" && !inApp {
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

// groupProblems are the groups' models whose provider is not under
// llm.providers (groups.ValidateList checks the shapes; the agent's
// section the tools of their allow-lists).
func (c *Config) groupProblems() settings.Problems {
	var ps settings.Problems
	for i, g := range c.Groups {
		for j, m := range g.Model {
			p, _, ok := strings.Cut(m, "/")
			if _, known := c.LLM.Providers[p]; ok && !known {
				ps.Add(fmt.Sprintf("groups[%d].model[%d]", i, j), "provider %q is not defined under llm.providers", p)
			}
		}
	}
	return ps
}
