package groups

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/botd-dev/botd/internal/settings"
)

// Config is one entry of the groups list in botd's config file.
type Config struct {
	Folder  string `yaml:"folder"`
	Name    string `yaml:"name"`
	Chat    string `yaml:"chat"`
	Trigger string `yaml:"trigger"`
	// RequiresTrigger is a pointer so that an absent key means "true".
	RequiresTrigger *bool `yaml:"requires_trigger"`
	Main            bool  `yaml:"main"`

	// Admins are the people who may change the group's settings,
	// schedule tasks and use generation: "<network>:<user id>".
	Admins []string `yaml:"admins"`
	// Model is the group's model and its fallbacks, each
	// "<provider>/<model>" of a configured provider; empty is llm.model.
	Model []string `yaml:"model"`
	// Prompt is the group's persona or standing instructions, added to
	// the system prompt.
	Prompt string `yaml:"prompt"`
	// Tools, when set, is the allow-list of tools the group's runs are
	// offered (botd's own by name, an extra server's as <server>__<tool>).
	Tools []string `yaml:"tools"`
	// MaxCostPerDay (USD) is the group's own daily budget; 0 is
	// agent.max_cost_per_day.
	MaxCostPerDay float64 `yaml:"max_cost_per_day"`
	// Language is the language the assistant answers in ("" follows the
	// chat).
	Language string `yaml:"language"`
}

// NeedsTrigger reports whether messages must start with the trigger to
// start a run; the main group and requires_trigger:false groups answer all.
func (c Config) NeedsTrigger() bool {
	if c.Main {
		return false
	}
	return c.RequiresTrigger == nil || *c.RequiresTrigger
}

// Group is the group the entry configures.
func (c Config) Group() Group {
	return Group{Folder: c.Folder, Name: c.Name, Chat: c.Chat, Trigger: c.Trigger,
		RequiresTrigger: c.NeedsTrigger(), Main: c.Main,
		Settings: Settings{Admins: c.Admins, Model: c.Model, Prompt: c.Prompt, Tools: c.Tools,
			MaxCostPerDay: c.MaxCostPerDay, Language: c.Language}}
}

// ValidateList reports every problem of the groups list with its key
// path; each chat id is checked by its network's rule (RegisterNetwork).
// folders learns each valid folder and its index, for the sections that
// name a group.
func ValidateList(list []Config, folders map[string]int) error {
	var ps settings.Problems
	chats := map[string]int{}
	mains := 0
	for i, g := range list {
		path := "groups[" + strconv.Itoa(i) + "]"
		if err := ValidateFolder(g.Folder); err != nil {
			ps.Add(path+".folder", "%v", err)
		} else if j, dup := folders[g.Folder]; dup {
			ps.Add(path+".folder", "%q is already used by groups[%d]", g.Folder, j)
		} else {
			folders[g.Folder] = i
		}
		if err := ValidateChatID(g.Chat); err != nil {
			ps.Add(path+".chat", "%v", err)
		} else if j, dup := chats[g.Chat]; dup {
			ps.Add(path+".chat", "%q is already registered by groups[%d]", g.Chat, j)
		} else {
			chats[g.Chat] = i
		}
		if g.Trigger != "" && strings.TrimSpace(g.Trigger) != g.Trigger {
			ps.Add(path+".trigger", "must not start or end with spaces")
		}
		for j, a := range g.Admins {
			if err := ValidateUserID(a); err != nil {
				ps.Add(path+".admins["+strconv.Itoa(j)+"]", "%v", err)
			}
		}
		for j, m := range g.Model {
			if err := ValidateModel(m); err != nil {
				ps.Add(path+".model["+strconv.Itoa(j)+"]", "%v", err)
			}
		}
		for j, t := range g.Tools {
			if strings.TrimSpace(t) == "" || strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' }) {
				ps.Add(path+".tools["+strconv.Itoa(j)+"]", "%q is not a tool name", t)
			}
		}
		if g.MaxCostPerDay < 0 {
			ps.Add(path+".max_cost_per_day", "must not be negative")
		}
		if len(g.Prompt) > MaxPrompt {
			ps.Add(path+".prompt", "is %d bytes; at most %d", len(g.Prompt), MaxPrompt)
		}
		if len(g.Language) > 40 || strings.ContainsAny(g.Language, "\n\r") {
			ps.Add(path+".language", "must be a language's name on one line, e.g. German")
		}
		if g.Main {
			mains++
			if mains > 1 {
				ps.Add(path+".main", "only one group may be the main group")
			}
		}
	}
	return ps.Err()
}

// MaxPrompt bounds groups[].prompt: standing instructions, not a book.
const MaxPrompt = 4000

// ValidateModel checks the "<provider>/<model>" shape of a group's model;
// whether the provider is configured is checked where llm.providers is
// known (the daemon's start).
func ValidateModel(m string) error {
	p, name, ok := strings.Cut(m, "/")
	if !ok || p == "" || name == "" || strings.ContainsFunc(m, func(r rune) bool { return r <= ' ' }) {
		return fmt.Errorf("%q must look like <provider>/<model>, e.g. openai/gpt-4.1-mini", m)
	}
	return nil
}
