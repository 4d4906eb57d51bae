// Package config loads botd's YAML configuration: environment expansion,
// strict keys with "did you mean", and the composition of the sections.
// Each component (agent, media, mcp, scheduler, each channel) owns its
// section's type, defaults and Validate and registers it from its own
// package (settings.Register, channels.Register); config decodes the file
// over their defaults through the registered types, calls every Validate
// and reports every problem with its key path, importing none of them.
// Only cmd/botd imports it, and reaches a section by its type (Section).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/llm/providers"
)

// DefaultAckReaction is ack_reaction's default.
const DefaultAckReaction = "👀"

// Duration is a time.Duration written as "30m", "24h" in YAML.
type Duration = settings.Duration

// Config is the whole file: the top-level keys, the sections config reads
// itself (channels, llm, groups), and every section a component
// registered (settings.Register), which Section hands back by its type.
type Config struct {
	AssistantName string           `yaml:"assistant_name"`
	DataDir       string           `yaml:"data_dir"`
	GroupsDir     string           `yaml:"groups_dir"`
	LogLevel      string           `yaml:"log_level"`
	Channels      Channels         `yaml:"channels"`
	LLM           providers.Config `yaml:"llm"`
	Groups        []Group          `yaml:"groups"`
	// Timezone is the IANA zone of scheduled tasks; empty is the system's.
	Timezone string `yaml:"timezone"`
	// AckReaction marks the message a run answers while it runs; empty
	// turns it off.
	AckReaction string `yaml:"ack_reaction"`

	// sections maps each registered section's key ("media",
	// "media.generation") to its value: a pointer to the component's
	// Config, holding the defaults until a file is decoded over them.
	sections map[string]any
	// secretVars maps a key path to the environment variables its raw value
	// referred to, so "set X" hints name the variable the user must export.
	secretVars map[string][]string
	// lines maps each key path written in the file to its line.
	lines map[string]int
}

// Section is c's section of type T, the one T's package registered
// (settings.Register): config.Section[media.Config](cfg).MaxDiskBytes. It
// panics when no section has that type, a build that does not link the
// package: a programming error, like a missing network.
func Section[T any](c *Config) *T {
	for _, v := range c.sections {
		if p, ok := v.(*T); ok {
			return p
		}
	}
	panic(fmt.Sprintf("config: no section of type %v is registered (is its package linked?)", reflect.TypeFor[T]()))
}

// Channels holds each channel's own section: the one its description
// registers (channels.Register), decoded strictly through its own type;
// the channel packages define the settings, their defaults and their
// validation.
type Channels struct {
	// Networks maps a registered network's name to its section: a
	// pointer to its Config, holding the defaults until a file is
	// decoded over them.
	Networks map[string]channels.NetworkConfig `yaml:"-"`
}

// UnmarshalYAML decodes channels.<name> over each network's own section.
// checkKeys has already reported and removed the keys no network owns.
func (c *Channels) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return nil // checkKeys reported it
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		nc, ok := c.Networks[key]
		if !ok {
			continue
		}
		if err := val.Decode(nc); err != nil {
			return err
		}
	}
	return nil
}

// Network returns the section of the network called name, or nil when no
// such network is built in.
func (c *Channels) Network(name string) channels.NetworkConfig { return c.Networks[name] }

// networkSections is every registered network's section over its defaults.
func networkSections() map[string]channels.NetworkConfig {
	out := map[string]channels.NetworkConfig{}
	for _, n := range channels.Networks() {
		if n.Config != nil {
			out[n.Name] = n.Config()
		}
	}
	return out
}

// Group is one entry of groups (package groups owns it).
type Group = groups.Config

// Defaults returns a Config holding every default, the base that a file is
// decoded over: each component's own defaults, composed.
func Defaults() *Config {
	c := &Config{
		AssistantName: channels.DefaultAssistantName,
		DataDir:       "./data",
		GroupsDir:     "./groups",
		LogLevel:      "info",
		Channels:      Channels{Networks: networkSections()},
		LLM:           providers.DefaultConfig(),
		AckReaction:   DefaultAckReaction,
		sections:      map[string]any{},
	}
	for _, s := range settings.Sections() {
		c.sections[s.Key] = s.New()
	}
	return c
}

// Problem is one thing wrong with a config, located by its key path.
type Problem = settings.Problem

// Problems is every problem found in a config; it is an error.
type Problems = settings.Problems

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
	paths := []*string{&c.DataDir, &c.GroupsDir}
	// A network or a section keeping a file of its own (WhatsApp's
	// session, an SQLite database) names it relative to the config too.
	var owners []any
	for _, n := range channels.Networks() {
		owners = append(owners, c.Channels.Networks[n.Name])
	}
	for _, s := range settings.Sections() {
		owners = append(owners, c.sections[s.Key])
	}
	for _, o := range owners {
		if p, ok := o.(interface{ Paths() []*string }); ok {
			paths = append(paths, p.Paths()...)
		}
	}
	for _, p := range paths {
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
		return nil, Problems{syntaxProblem(data, err)}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	cfg.lines = map[string]int{}
	lineIndex(root, "", cfg.lines)
	var probs Problems
	probs = append(probs, expand(root, "", lookup, cfg.secretVars)...)
	sch := schemaOf()
	probs = append(probs, checkKeys(root, "", sch.typ)...)
	if err := root.Decode(cfg.tree(sch).Interface()); err != nil {
		return cfg, append(probs, Problem{Msg: err.Error()})
	}
	var vp Problems
	if errors.As(cfg.Validate(), &vp) {
		probs = append(probs, vp...)
	}
	for i := range probs {
		if probs[i].Path != "" {
			probs[i].Line = cfg.Line(probs[i].Path)
		}
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
