package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/media"
)

func cmdConfig(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "check" && args[0] != "-h" && args[0] != "--help") {
		fmt.Fprintln(stderr, "Usage: botd config check [--config FILE]")
		return fail(2, "")
	}
	if args[0] != "check" {
		fmt.Fprintln(stdout, "Usage: botd config check [--config FILE]\n\nValidate the config and list every problem with its key path.")
		return nil
	}
	fs := newFlags("config check", "botd config check [--config FILE]",
		"Validate the config and list every problem with its key path; exit 1 if there are any. "+
			"With media.store type s3, also write, read back and delete a probe object in the bucket.", stderr)
	cfgFlag := configFlag(fs)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	path, cfg, err := readConfig(*cfgFlag)
	var ps config.Problems
	if errors.As(err, &ps) {
		fmt.Fprintf(stdout, "%s: %d problem(s)\n", path, len(ps))
		for _, p := range ps {
			fmt.Fprintln(stdout, "  "+p.Located())
		}
		return fail(1, "")
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	// Settings can be valid and the bucket still unusable: prove it
	// answers and takes writes, so `botd run` does not find out later.
	if err := checkStore(ctx, cfg); err != nil {
		fmt.Fprintf(stdout, "%s: 1 problem(s)\n  media.store: %v\n", path, err)
		return fail(1, "")
	}
	// A valid-looking token can still be revoked or lack a permission:
	// a network that can tell asks now rather than at the first message.
	for _, n := range channels.Networks() {
		nc := cfg.Channels.Network(n.Name)
		if n.Check == nil || nc == nil || !nc.On() {
			continue
		}
		if err := n.Check(ctx, nc); err != nil {
			fmt.Fprintf(stdout, "%s: 1 problem(s)\n  channels.%s: %v\n", path, n.Name, err)
			return fail(1, "")
		}
	}
	fmt.Fprintf(stdout, "%s: OK\n", path)
	for _, w := range configWarnings(cfg) {
		fmt.Fprintln(stdout, "  warning: "+w)
	}
	return nil
}

// configWarnings are what a valid config still gets wrong for a
// newcomer: botd runs, and would only answer the chat that it cannot.
func configWarnings(cfg *config.Config) []string {
	var out []string
	if len(cfg.LLM.UsableModels()) == 0 {
		if len(cfg.LLM.Models()) == 0 {
			out = append(out, "llm.model: no model is configured, so no message can be answered (set llm.model and a provider's api_key)")
		} else {
			// LLMSetup names this config's variables, a local server's
			// base URL among them (it needs no key).
			out = append(out, "llm: no model can answer: every entry of llm.model and llm.fallback names a provider without an "+
				"api_key. "+cfg.LLMSetup())
		}
	}
	out = append(out, groupWarnings(cfg)...)
	for _, n := range channels.Networks() {
		if w, ok := cfg.Channels.Network(n.Name).(channels.Warner); ok {
			out = append(out, w.Warnings()...)
		}
	}
	return out
}

// unknownGroup is the error for a group folder the config does not have:
// it lists the ones it has.
func unknownGroup(set *groups.Set, folder string) error {
	var have []string
	for _, g := range set.All() {
		have = append(have, g.Folder)
	}
	if len(have) == 0 {
		return fail(1, "unknown group %q: the config has no groups (add one under groups:)", folder)
	}
	slices.Sort(have)
	return fail(1, "unknown group %q: the config's groups are %s", folder, strings.Join(have, ", "))
}

// readConfig loads the config that flagValue (--config), ./config.yaml or
// $BOTD_CONFIG names. A missing file is told with the folder looked in
// and how to name another.
func readConfig(flagValue string) (string, *config.Config, error) {
	path := configPath(flagValue)
	cfg, err := config.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		where, _ := filepath.Abs(filepath.Dir(path))
		how := "give --config FILE or set BOTD_CONFIG"
		if flagValue != "" {
			how = "check the --config path"
		}
		return path, nil, fmt.Errorf("no config file %s in %s: %s (to start, copy config.example.yaml to config.yaml)",
			filepath.Base(path), where, how)
	}
	return path, cfg, err
}

// loadConfigFor loads and validates for a command that uses only part of
// the config: a problem under a key it does not use (uses says no) is
// printed to warn as a warning and the command goes on; every other
// problem stops it, listed. A nil uses means the command uses it all.
func loadConfigFor(flagValue string, uses func(path string) bool, warn io.Writer) (*config.Config, error) {
	path, cfg, err := readConfig(flagValue)
	var ps config.Problems
	if errors.As(err, &ps) {
		var stop, skip config.Problems
		for _, p := range ps {
			if uses != nil && p.Path != "" && !uses(p.Path) {
				skip = append(skip, p)
			} else {
				stop = append(stop, p)
			}
		}
		if len(stop) > 0 {
			lines := make([]string, len(stop))
			for i, p := range stop {
				lines[i] = "  " + p.Located()
			}
			return nil, fail(1, "%s has %d problem(s):\n%s\nrun 'botd config check' after fixing them", path, len(stop), strings.Join(lines, "\n"))
		}
		for _, p := range skip {
			fmt.Fprintf(warn, "warning: %s: %s (not used by this command; botd config check lists it)\n", path, p.Located())
		}
		err = nil
	}
	if err != nil {
		return nil, fail(1, "%v", err)
	}
	// One pool for every child that reads a member's file on this host,
	// whatever group, client or botd process (the daemon, each botd mcp)
	// asks: lock files in data/box share it between the processes.
	box.SetPool(config.Section[media.Config](cfg).Parse.TotalMemoryBytes)
	box.SetHostPool(filepath.Join(cfg.DataDir, "box"))
	return cfg, nil
}

// under is a uses function: the keys at or below one of prefixes.
func under(prefixes ...string) func(string) bool {
	return func(path string) bool {
		for _, p := range prefixes {
			if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
				return true
			}
		}
		return false
	}
}

// notUnder is a uses function: every key but those at or below prefixes.
func notUnder(prefixes ...string) func(string) bool {
	in := under(prefixes...)
	return func(path string) bool { return !in(path) }
}

// groupWarnings are groups entries that are valid but cannot be what was
// meant: a chat id no chat of its network has, a trigger nobody types.
func groupWarnings(cfg *config.Config) []string {
	var out []string
	for i, g := range cfg.Groups {
		path := "groups[" + strconv.Itoa(i) + "]"
		name, native, _ := strings.Cut(g.Chat, ":")
		if n, ok := channels.Lookup(name); ok && n.ChatWarning != nil {
			if w := n.ChatWarning(native); w != "" {
				out = append(out, fmt.Sprintf("%s.chat%s: %q cannot be a %s chat: %s", path, cfg.At(path+".chat"), g.Chat, name, w))
			}
		}
		if t := g.Trigger; t != "" && !strings.HasPrefix(t, "@") {
			out = append(out, fmt.Sprintf("%s.trigger%s: %q has no @, so botd answers every message that starts with the word %s; "+
				"for a mention write trigger: %q", path, cfg.At(path+".trigger"), t, t, "@"+t))
		}
	}
	return out
}
