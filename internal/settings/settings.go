// Package settings holds what every component's section of botd's config
// file shares: durations written as "30m", and problems that name their key
// path. Each component (agent, media, mcp, scheduler, each channel) owns
// its Config type, its defaults and its Validate; package config only
// decodes the file and composes the sections.
package settings

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as "30m", "24h" in YAML.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return fmt.Errorf("invalid duration %q (want e.g. 30s, 30m, 24h)", n.Value)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Problem is one thing wrong with a config, located by its key path.
type Problem struct {
	Path string
	Msg  string
	// EnvHint, for a missing secret, is how the environment variable the
	// value was meant to come from is named after Msg (" (set %s)");
	// package config fills it in, since only it saw the raw file.
	EnvHint string
	// Line is the line of the config file the problem is on, when known
	// (package config fills it in from the file).
	Line int
}

// SetHint is the usual EnvHint: "required ... (set TELEGRAM_BOT_TOKEN)".
const SetHint = " (set %s)"

func (p Problem) String() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// Located is String with the line of the file it is on, when known, for
// what a person reads: "media.ref_ttl: invalid duration … (line 12)". (A
// syntax error's message names its line itself.)
func (p Problem) Located() string {
	if p.Line > 0 && p.Path != "" {
		return p.String() + " (line " + strconv.Itoa(p.Line) + ")"
	}
	return p.String()
}

// Problems is every problem found in a config; it is an error.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Add appends a problem at path.
func (ps *Problems) Add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// AddSecret appends the problem of a missing secret, whose message config
// ends with the environment variable to set.
func (ps *Problems) AddSecret(path, msg, hint string) {
	*ps = append(*ps, Problem{Path: path, Msg: msg, EnvHint: hint})
}

// Err is ps as an error, nil when there is no problem.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// Of is the problems of err: those of a Problems, or err's text as one
// problem without a path.
func Of(err error) Problems {
	if err == nil {
		return nil
	}
	var ps Problems
	if errors.As(err, &ps) {
		return ps
	}
	return Problems{{Msg: err.Error()}}
}

// CheckURL adds a problem at path unless raw is empty or an absolute
// http(s) URL.
func (ps *Problems) CheckURL(path, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ps.Add(path, "must be an http(s) URL, got %q", raw)
	}
}
