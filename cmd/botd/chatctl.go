package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/chatctl"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/providers"
)

// groupModels is chatctl.Models over llm.providers: a group's model and
// its fallbacks become a chain of their own, each entry as llm.model's
// would be (the config's entry of the same model lends its settings).
type groupModels struct {
	cfg *config.Config
	ps  *llmProviders
	obs func(llm.Attempt)
}

var _ chatctl.Models = groupModels{}

// Default is the model runs start with: the first usable of llm.model
// and llm.fallback.
func (m groupModels) Default() string {
	if ms := m.cfg.LLM.UsableModels(); len(ms) > 0 {
		return ms[0].Provider + "/" + ms[0].Name
	}
	return m.cfg.LLM.Model.Provider + "/" + m.cfg.LLM.Model.Name
}

// Resolve completes a bare model name from llm.model and llm.fallback,
// and checks that the provider is configured and has a key.
func (m groupModels) Resolve(name string) (string, error) {
	if len(name) > 200 || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' }) {
		return "", fmt.Errorf("that is not a model name")
	}
	prov, model, ok := strings.Cut(name, "/")
	if !ok {
		for _, c := range m.cfg.LLM.Models() {
			if c.Name == name {
				prov, model, ok = c.Provider, c.Name, true
				break
			}
		}
		if !ok {
			return "", fmt.Errorf("no configured model is called %q; name it as <provider>/<model> (providers: %s)", name, m.providerNames())
		}
	}
	p, known := m.cfg.LLM.Providers[prov]
	switch {
	case !known || model == "":
		return "", fmt.Errorf("%q is not <provider>/<model> of a configured provider (providers: %s)", name, m.providerNames())
	case p.APIKey == "" && !p.Keyless():
		return "", fmt.Errorf("the provider %q has no API key", prov)
	}
	return prov + "/" + model, nil
}

func (m groupModels) providerNames() string {
	var names []string
	for n := range m.cfg.LLM.Providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Chain is list's fallback chain.
func (m groupModels) Chain(list []string) (llm.Provider, error) {
	var entries []llm.Entry
	for _, name := range list {
		full, err := m.Resolve(name)
		if err != nil {
			return nil, err
		}
		prov, model, _ := strings.Cut(full, "/")
		conf := providers.Model{Provider: prov, Name: model}
		for _, c := range m.cfg.LLM.Models() {
			if c.Provider == prov && c.Name == model {
				conf = c
			}
		}
		p, err := m.ps.get(prov)
		if err != nil {
			return nil, err
		}
		attempts := conf.MaxAttempts
		if attempts == 0 {
			attempts = 2
		}
		caps := modelCaps(conf, p)
		entries = append(entries, llm.Entry{Provider: p, Model: model, MaxAttempts: attempts, Caps: &caps})
	}
	return llm.NewChain(entries, llm.WithObserver(m.obs))
}

// offerCommands registers the chat's commands where the network's
// clients offer them as a menu (Telegram). A failure costs only the menu:
// the commands work typed.
func (d *daemon) offerCommands(ctx context.Context, name string, ch channels.Channel) {
	m, ok := ch.(channels.CommandMenu)
	if !ok {
		return
	}
	cmds := make([]channels.BotCommand, 0, len(chatctl.List))
	for _, c := range chatctl.List {
		help := c.Help
		if c.Args != "" {
			help = c.Args + " — " + help
		}
		cmds = append(cmds, channels.BotCommand{Name: c.Name, Help: help})
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.SetCommands(ctx, cmds); err != nil {
		d.log.Warn("the chat's command menu was not registered; the commands work typed", "channel", name, "err", err)
		return
	}
	d.log.Info("chat commands registered", "channel", name, "commands", len(cmds))
}

// groupSettings is a group's settings with their sources, for the
// dashboard (chatctl.Policy.Settings).
func (d *daemon) groupSettings(ctx context.Context, folder string) ([]web.GroupSetting, error) {
	g, ok := d.groups.ByFolder(folder)
	if !ok || d.cmds == nil {
		return nil, fmt.Errorf("the settings of %s are not known yet", folder)
	}
	var out []web.GroupSetting
	for _, s := range d.cmds.Policy.Settings(ctx, g, d.cfg.Location()) {
		out = append(out, web.GroupSetting{Name: s.Name, Value: s.Value, Source: s.Source, Changeable: s.Changeable, Overridden: s.Overridden})
	}
	return out, nil
}

// setGroupSetting is the dashboard's change of a group's setting (value
// "": back to the config's): the model as an admin's /model, the prompt
// and the tools as config check checks them, kept in the database.
func (d *daemon) setGroupSetting(ctx context.Context, folder, name, value string) (refused string, err error) {
	g, ok := d.groups.ByFolder(folder)
	switch {
	case !ok:
		return "there is no group " + folder + ".", nil
	case d.cmds == nil:
		return "the assistant is not running yet; try again in a moment.", nil
	}
	var no chatctl.Refusal
	if err := d.cmds.Policy.Change(ctx, g, name, value, chatctl.ByDashboard); errors.As(err, &no) {
		return no.Error(), nil
	} else if err != nil {
		return "", err
	}
	d.log.Info("group setting changed on the dashboard", "group", folder, "setting", name, "reset", value == "")
	return "", nil
}
