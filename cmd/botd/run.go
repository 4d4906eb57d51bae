package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"strings"

	"github.com/botd-dev/botd/config"
)

// parseAndLoad parses a command's flags, then loads the config its
// --config flag (cfgFlag) names.
func parseAndLoad(fs *flag.FlagSet, args []string, cfgFlag *string) (*config.Config, error) {
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	return loadConfig(*cfgFlag)
}

// loadConfig loads and validates, turning problems into an exit-1 error
// that lists each one.
func loadConfig(flagValue string) (*config.Config, error) {
	return loadConfigFor(flagValue, nil, nil)
}

func newLogger(level string, w io.Writer) *slog.Logger {
	l, _ := newLevelLogger(level, w)
	return l
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "botd run [--config FILE]",
		"Run the daemon: connect the enabled channels, answer in registered groups, serve media to the agent (in-process) and to `botd mcp` clients (over IPC files).", stderr)
	cfgFlag := configFlag(fs)
	cfg, err := parseAndLoad(fs, args, cfgFlag)
	if err != nil {
		return err
	}
	if missing := cfg.RunReadiness(); len(missing) > 0 {
		return fail(1, "cannot run:\n  %s", strings.Join(missing, "\n  "))
	}
	log, level := newLevelLogger(cfg.LogLevel, stderr)
	// One log format: libraries that log through the standard log package
	// or slog's default (Slack's socket mode among them) come out as
	// botd's own lines.
	slog.SetDefault(log.With("component", "lib"))
	d, err := newDaemon(cfg, log)
	if err != nil {
		return err
	}
	d.out, d.logLevel = stdout, level
	d.followFile(configPath(*cfgFlag))
	return d.run(ctx)
}
