// Package chatctl is what people manage from the chat: the commands
// botd answers without the model (/help, /status, /new, /stop, /model,
// /usage), who may do what (access.owners, groups[].admins, everyone else
// a member) and each group's own settings (groups[].model, prompt, tools,
// max_cost_per_day, language), with what an admin changed from the chat
// kept in the database over the config.
package chatctl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/botd-dev/botd/access"
	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/llm"
)

// Models is what the daemon knows of the configured models.
type Models interface {
	// Resolve is name as "<provider>/<model>" of a configured provider
	// (a bare model name is completed), or why it is not one.
	Resolve(name string) (string, error)
	// Chain is the provider that asks list's models in turn.
	Chain(list []string) (llm.Provider, error)
	// Default is the model runs use without a group's own
	// ("<provider>/<model>").
	Default() string
}

// Override is a setting an admin changed from the chat.
type Override struct {
	Value string
	By    string // "<network>:<user id>"
	At    time.Time
}

// maxChains bounds the model chains kept built.
const maxChains = 64

// The settings an admin can change (the model from the chat too), by
// their names in group_settings.
const (
	settingModel  = "model"
	settingPrompt = "prompt"
	settingTools  = "tools"
)

// Policy is the groups' settings and their people's roles: the agent's
// agent.Policy and the commands' view of them.
type Policy struct {
	DB *sql.DB
	// Access is the access section botd started with; SetAccess puts a
	// reloaded one in force.
	Access access.Config
	Models Models
	// CheckTool is why a group's allow-list cannot name a tool (nil:
	// it can): agent.Config.CheckTool, as config check says it. Nil
	// takes any name.
	CheckTool func(name string) error
	Log       *slog.Logger
	Now       func() time.Time // nil: time.Now

	live atomic.Pointer[access.Config] // set by SetAccess

	mu     sync.Mutex
	chains map[string]llm.Provider // by the joined model list
	// kept are the groups' overrides as last read or set (nil: none),
	// by folder and setting, so a run costs the database nothing for
	// them; only the active instance answers chats, and it reads each
	// group once.
	kept map[[2]string]*Override
}

var _ agent.Policy = (*Policy)(nil)

// SetAccess puts a reloaded access section in force (owners,
// per_sender_per_hour) for the messages and runs from now on.
func (p *Policy) SetAccess(c access.Config) { p.live.Store(&c) }

// access is the access section in force.
func (p *Policy) access() *access.Config {
	if c := p.live.Load(); c != nil {
		return c
	}
	return &p.Access
}

func (p *Policy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Role is the role of sender in g: an owner (access.owners), an admin
// (groups[].admins), else a member. While nobody is named — no owner and
// no admin of the group — everyone may do everything, as before roles
// existed.
func (p *Policy) Role(g *groups.Group, chat, sender string) groups.Role {
	id := groups.UserID(chat, sender)
	switch {
	case sender != "" && p.access().IsOwner(id):
		return groups.Owner
	case sender != "" && g.HasAdmin(id):
		return groups.Admin
	case len(p.access().Owners) == 0 && len(g.Settings.Admins) == 0:
		return groups.Owner
	}
	return groups.Member
}

// Model is the group's model list and where it comes from: "chat" (an
// admin's /model), "config" (groups[].model) or "default" (llm.model).
func (p *Policy) Model(ctx context.Context, g *groups.Group) (list []string, source string, o Override) {
	kept := p.setting(ctx, g, settingModel)
	switch {
	case kept != nil:
		return strings.Split(kept.Value, ","), "chat", *kept
	case len(g.Settings.Model) > 0:
		return g.Settings.Model, "config", Override{}
	}
	return []string{p.Models.Default()}, "default", Override{}
}

// setting is g's override of a setting (nil: none), read once.
func (p *Policy) setting(ctx context.Context, g *groups.Group, name string) *Override {
	key := [2]string{g.Folder, name}
	p.mu.Lock()
	kept, known := p.kept[key]
	p.mu.Unlock()
	if known {
		return kept
	}
	read, ok, err := p.override(ctx, g.Folder, name)
	switch {
	case err != nil:
		p.Log.Warn("chatctl: group settings unreadable; using the config's", "group", g.Folder, "setting", name, "err", err)
		return nil // read again next time
	case ok:
		kept = &read
	}
	p.keep(g.Folder, name, kept)
	return kept
}

// Prompt is the group's standing instructions and where they come from
// ("config", or "chat" for an override kept in the database).
func (p *Policy) Prompt(ctx context.Context, g *groups.Group) (string, string, Override) {
	if o := p.setting(ctx, g, settingPrompt); o != nil {
		return o.Value, "chat", *o
	}
	return g.Settings.Prompt, "config", Override{}
}

// Tools is the group's tool allow-list (nil: all) and where it comes
// from ("config", or "chat" for an override kept in the database).
func (p *Policy) Tools(ctx context.Context, g *groups.Group) ([]string, string, Override) {
	if o := p.setting(ctx, g, settingTools); o != nil {
		return strings.Split(o.Value, ","), "chat", *o
	}
	return g.Settings.Tools, "config", Override{}
}

// Run implements agent.Policy.
func (p *Policy) Run(ctx context.Context, g *groups.Group) agent.GroupRun {
	s := g.Settings
	r := agent.GroupRun{Language: s.Language, MaxCostPerDay: agent.USD(s.MaxCostPerDay),
		Roles: len(p.access().Owners) > 0 || len(s.Admins) > 0}
	r.Prompt, _, _ = p.Prompt(ctx, g)
	r.Tools, _, _ = p.Tools(ctx, g)
	list, source, _ := p.Model(ctx, g)
	if source == "default" {
		return r
	}
	chain, err := p.chain(list)
	if err != nil {
		p.Log.Error("chatctl: the group's model cannot be used; using llm.model", "group", g.Folder, "model", list, "err", err)
		return r
	}
	_, r.Model, _ = strings.Cut(list[0], "/")
	r.LLM = chain
	return r
}

func (p *Policy) chain(list []string) (llm.Provider, error) {
	key := strings.Join(list, ",")
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.chains[key]; ok {
		return c, nil
	}
	c, err := p.Models.Chain(list)
	if err != nil {
		return nil, err
	}
	if p.chains == nil || len(p.chains) >= maxChains {
		p.chains = map[string]llm.Provider{} // admins tried many lists: start over
	}
	p.chains[key] = c
	return c, nil
}

// SetModel keeps an admin's choice of the group's model ("" goes back to
// the config's).
func (p *Policy) SetModel(ctx context.Context, g *groups.Group, list []string, by string) error {
	if len(list) > 0 {
		if _, err := p.chain(list); err != nil {
			return err
		}
	}
	return p.set(ctx, g, settingModel, strings.Join(list, ","), by)
}

// set keeps an override of a setting of g ("": none, the config's).
func (p *Policy) set(ctx context.Context, g *groups.Group, name, value, by string) error {
	if value == "" {
		if _, err := p.DB.ExecContext(ctx, `DELETE FROM group_settings WHERE folder = ? AND name = ?`, g.Folder, name); err != nil {
			return fmt.Errorf("reset the %s of %s: %w", name, g.Folder, err)
		}
		p.keep(g.Folder, name, nil)
		return nil
	}
	o := Override{Value: value, By: by, At: time.UnixMilli(p.now().UnixMilli())}
	_, err := p.DB.ExecContext(ctx, `INSERT INTO group_settings(folder, name, value, set_by, at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(folder, name) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, at = excluded.at`,
		g.Folder, name, o.Value, by, o.At.UnixMilli())
	if err != nil {
		return fmt.Errorf("set the %s of %s: %w", name, g.Folder, err)
	}
	p.keep(g.Folder, name, &o)
	return nil
}

// keep remembers a group's override of a setting (nil: none).
func (p *Policy) keep(folder, name string, o *Override) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kept == nil {
		p.kept = map[[2]string]*Override{}
	}
	p.kept[[2]string{folder, name}] = o
}

func (p *Policy) override(ctx context.Context, folder, name string) (Override, bool, error) {
	var o Override
	var at int64
	err := p.DB.QueryRowContext(ctx, `SELECT value, set_by, at FROM group_settings WHERE folder = ? AND name = ?`, folder, name).
		Scan(&o.Value, &o.By, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Override{}, false, nil
	}
	if err != nil {
		return Override{}, false, fmt.Errorf("group setting %s of %s: %w", name, folder, err)
	}
	o.At = time.UnixMilli(at)
	return o, true, nil
}

// ByDashboard is who an override set on the web dashboard was set by.
const ByDashboard = "dashboard"

// Refusal is why an admin's change was not made, a sentence to say as it
// is (in the chat after "Not changed: ", on the dashboard).
type Refusal string

func (r Refusal) Error() string { return string(r) }

// maxFallbacks bounds the fallbacks an admin may give a group's model.
const maxFallbacks = 3

// ChangeModel is an admin's change of g's model, as /model and the
// dashboard take it: "<model>[, <fallback>…]" (bare names completed), or
// "default" (or nothing) to go back to the config's. A value that cannot
// be a model list is a Refusal; any other error is the database's.
func (p *Policy) ChangeModel(ctx context.Context, g *groups.Group, text, by string) error {
	text = strings.TrimSpace(text)
	if text == "" || strings.EqualFold(text, "default") {
		return p.SetModel(ctx, g, nil, by)
	}
	var list []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' }) {
		name, err := p.Models.Resolve(f)
		if err != nil {
			return Refusal(err.Error())
		}
		list = append(list, name)
	}
	if len(list) > 1+maxFallbacks {
		return Refusal("give a model and at most three fallbacks.")
	}
	if _, err := p.chain(list); err != nil {
		p.Log.Warn("chatctl: model refused", "group", g.Folder, "model", list, "err", err)
		return Refusal("that model cannot be used here.")
	}
	return p.SetModel(ctx, g, list, by)
}

// Change is an admin's change of one of g's settings from the dashboard:
// "model" as ChangeModel takes it, "prompt" (standing instructions, at
// most groups.MaxPrompt bytes) or "tools" (an allow-list, names separated
// by commas, each checked as config check checks groups[].tools); value
// "" goes back to the config's. A value that cannot be taken is a
// Refusal; any other error is the database's.
func (p *Policy) Change(ctx context.Context, g *groups.Group, name, value, by string) error {
	value = strings.TrimSpace(value)
	switch name {
	case settingModel:
		return p.ChangeModel(ctx, g, value, by)
	case settingPrompt:
		if len(value) > groups.MaxPrompt {
			return Refusal(fmt.Sprintf("the standing instructions are %d bytes; at most %d.", len(value), groups.MaxPrompt))
		}
		return p.set(ctx, g, settingPrompt, strings.ReplaceAll(value, "\r\n", "\n"), by)
	case settingTools:
		var list []string
		for _, t := range strings.FieldsFunc(value, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			if p.CheckTool != nil {
				if err := p.CheckTool(t); err != nil {
					return Refusal(err.Error())
				}
			}
			if !slices.Contains(list, t) {
				list = append(list, t)
			}
		}
		return p.set(ctx, g, settingTools, strings.Join(list, ","), by)
	}
	return Refusal(fmt.Sprintf("%q cannot be changed here; it is the config's.", name))
}

// Setting is one of a group's settings as the dashboard shows it.
type Setting struct {
	Name, Value string
	// Source is where Value comes from: "config", "default" (botd's),
	// "dashboard", or "chat: <who>, <when>".
	Source string
	// Changeable: an admin may change it (and reset it to the config's).
	Changeable bool
	// Overridden: an override kept in the database is in force.
	Overridden bool
}

// Settings is g's settings in force with their sources: model (and
// fallbacks), standing instructions, tools, daily budget, language,
// admins.
func (p *Policy) Settings(ctx context.Context, g *groups.Group, loc *time.Location) []Setting {
	s := g.Settings
	fromConfig := func(name, value, unset string) Setting {
		if value == "" {
			return Setting{Name: name, Value: unset, Source: "default"}
		}
		return Setting{Name: name, Value: value, Source: "config"}
	}
	list, source, o := p.Model(ctx, g)
	model := Setting{Name: settingModel, Value: strings.Join(list, ", "), Source: source, Changeable: true, Overridden: source == "chat"}
	if model.Overridden {
		model.Source = overrideSource(o, loc)
	}
	prompt, source, o := p.Prompt(ctx, g)
	promptSet := fromConfig(settingPrompt, prompt, "none")
	promptSet.Changeable = true
	if source == "chat" {
		promptSet.Source, promptSet.Overridden = overrideSource(o, loc), true
	}
	tools, source, o := p.Tools(ctx, g)
	toolsSet := fromConfig(settingTools, strings.Join(tools, ", "), "all")
	toolsSet.Changeable = true
	if source == "chat" {
		toolsSet.Source, toolsSet.Overridden = overrideSource(o, loc), true
	}
	budget := ""
	if s.MaxCostPerDay > 0 {
		budget = fmt.Sprintf("$%.2f", s.MaxCostPerDay)
	}
	return []Setting{
		model,
		promptSet,
		toolsSet,
		fromConfig("max_cost_per_day", budget, "agent.max_cost_per_day"),
		fromConfig("language", s.Language, "the asker's"),
		fromConfig("admins", strings.Join(s.Admins, ", "), "none"),
	}
}

// overrideSource says who set an override and when.
func overrideSource(o Override, loc *time.Location) string {
	if o.By == ByDashboard {
		return ByDashboard
	}
	if loc == nil {
		loc = time.Local
	}
	return "chat: " + o.By + ", " + o.At.In(loc).Format("2 Jan 15:04")
}
