package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/config"
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
	path := configPath(*cfgFlag)
	cfg, err := config.Load(path)
	var ps config.Problems
	if errors.As(err, &ps) {
		fmt.Fprintf(stdout, "%s: %d problem(s)\n", path, len(ps))
		for _, p := range ps {
			fmt.Fprintln(stdout, "  "+p.String())
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
			out = append(out, "llm: no model can answer: every entry of llm.model and llm.fallback names a provider without an "+
				"api_key (set one, e.g. ANTHROPIC_API_KEY for the example config)")
		}
	}
	for _, n := range channels.Networks() {
		if w, ok := cfg.Channels.Network(n.Name).(channels.Warner); ok {
			out = append(out, w.Warnings()...)
		}
	}
	return out
}
