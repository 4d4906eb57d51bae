// Package modelview is what a model is shown of botd's tools: one group's
// Session runs each tool's model half (tools.Spec.MCP) against the host
// (a tools.Caller: the media service in process, or the IPC client of
// botd mcp) and renders the files the host saved — an image inline or as
// a preview, a document's text a part at a time, a video's stills, a web
// page's readable text — in the group folder. The agent calls a Session
// directly; the MCP servers of package mcp show the same results to
// external clients. The parsers of members' files run in internal/box
// children (the jobs are registered here).
package modelview

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/box"
	registry "github.com/botd-dev/botd/tools"
)

// DefaultInlineMaxBytes applies when Options.InlineMaxBytes is zero; it
// matches media.inline_max_bytes' default.
const DefaultInlineMaxBytes = 1 << 20

// DefaultCallTimeout bounds one call of the host. Fetching a large video
// through a slow channel can take a while, so it is generous; when it
// passes, a call the host took answers in_progress (with the download's
// figures) and only a call no host ever looked at answers no_host.
const DefaultCallTimeout = 2 * time.Minute

// DefaultGenerateTimeout bounds a generate_image or speak call, which can
// take the provider minutes; it stays below ipc.MaxRequestAge, past which
// the IPC host would refuse a request it had not yet claimed.
const DefaultGenerateTimeout = 8 * time.Minute

// Options configures the Session of one group.
type Options struct {
	// GroupDir is the absolute path of groups/<folder>; fetched media lives
	// below it and send_media paths are relative to it.
	GroupDir string
	// InlineMaxBytes is the largest file sent inline (image content or
	// embedded resource), and the budget of a preview. Zero means
	// DefaultInlineMaxBytes.
	InlineMaxBytes int64
	// Caller reaches the host: the media service's in-process caller for
	// the agent, an *ipc.Client for the group's IPC folder in botd mcp.
	Caller registry.Caller
	// Log receives diagnostics; nil means slog.Default(). Never stdout.
	Log *slog.Logger
	// CallTimeout bounds each host call; zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// GenerateTimeout bounds generate_image and speak calls instead; zero
	// means DefaultGenerateTimeout, and it is never below CallTimeout.
	GenerateTimeout time.Duration
	// GlobalDir is the absolute path of the global memory's folder
	// (groups.GlobalWorkspace(groups_dir).Root), which every group reads.
	// Empty: remember and forget refuse scope "global".
	GlobalDir string
	// Main is set for the main group's session, the only one whose
	// remember and forget may change the global memory.
	Main bool
	// Generate offers the generation tools whose models are configured.
	Generate registry.Generate
	// Internet offers the web tools that are configured (fetch_url,
	// web_search).
	Internet registry.Internet
	// Parse bounds each child process that reads a member's file (a
	// document's text, an image's preview, a video's stills): the
	// media.parse settings; zero fields take box's defaults.
	Parse box.Limits
	// ReadOnly offers only the tools that change nothing and refuses the
	// others (an MCP token's read_only, botd mcp --read-only).
	ReadOnly bool
}

// Session runs the tools of one group for a model; it implements
// registry.Env. Safe for concurrent calls.
type Session struct {
	ws          groups.Workspace
	global      groups.Workspace // Root "" when there is no global memory
	main        bool
	inlineMax   int64
	caller      registry.Caller
	log         *slog.Logger
	callTimeout time.Duration
	genTimeout  time.Duration // generate_image and speak
	gen         registry.Generate
	internet    registry.Internet
	parse       box.Limits
	readOnly    bool
}

var _ registry.Env = (*Session)(nil)

// New builds the Session of one group. It does no I/O: the group folder
// may not exist yet.
func New(opts Options) (*Session, error) {
	if opts.Caller == nil {
		return nil, errors.New("tool session: no Caller")
	}
	if opts.GroupDir == "" || !filepath.IsAbs(opts.GroupDir) {
		return nil, fmt.Errorf("tool session: group dir %q must be an absolute path", opts.GroupDir)
	}
	if opts.GlobalDir != "" {
		if !filepath.IsAbs(opts.GlobalDir) {
			return nil, fmt.Errorf("tool session: global dir %q must be an absolute path", opts.GlobalDir)
		}
		if filepath.Clean(opts.GlobalDir) == filepath.Clean(opts.GroupDir) {
			return nil, fmt.Errorf("tool session: global dir %q is the group dir", opts.GlobalDir)
		}
	}
	t := &Session{
		ws:          groups.Workspace{Root: filepath.Clean(opts.GroupDir)},
		main:        opts.Main,
		inlineMax:   opts.InlineMaxBytes,
		caller:      opts.Caller,
		log:         opts.Log,
		callTimeout: opts.CallTimeout,
		genTimeout:  opts.GenerateTimeout,
		gen:         opts.Generate,
		internet:    opts.Internet,
		parse:       opts.Parse.WithDefaults(),
		readOnly:    opts.ReadOnly,
	}
	if opts.GlobalDir != "" {
		t.global = groups.Workspace{Root: filepath.Clean(opts.GlobalDir)}
	}
	if t.inlineMax <= 0 {
		t.inlineMax = DefaultInlineMaxBytes
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	if t.callTimeout <= 0 {
		t.callTimeout = DefaultCallTimeout
	}
	if t.genTimeout <= 0 {
		t.genTimeout = DefaultGenerateTimeout
	}
	t.genTimeout = max(t.genTimeout, t.callTimeout)
	return t, nil
}

// Offer is what this session is built for, in the registry's terms.
func (t *Session) Offer() registry.Offer {
	return registry.Offer{Main: t.main, GlobalMemory: t.main && t.global.Root != "", Generate: t.gen, Internet: t.internet,
		ReadOnly: t.readOnly}
}

// Tools are the tools this session offers, in the registry's order.
func (t *Session) Tools() []registry.Spec { return registry.For(t.Offer()) }

// Dir is the group folder the session serves.
func (t *Session) Dir() string { return t.ws.Root }

// Log is the session's logger.
func (t *Session) Log() *slog.Logger { return t.log }

// Run runs the tool named name with the model's arguments. A tool this
// session does not offer, a failure and even a panic of the tool are
// results the model reads (IsError), never a failed run; the text of a
// failure names no host path (ForModel).
func (t *Session) Run(ctx context.Context, name string, args registry.Args) (res *registry.Result) {
	spec, ok := registry.Lookup(name)
	o := t.Offer()
	if !ok || (spec.Offered != nil && !spec.Offered(o)) || spec.MCP == nil {
		return registry.ToolFailure(name, registry.CodeBadRequest, fmt.Sprintf("there is no tool called %q", name))
	}
	if !spec.OfferedTo(o) {
		return registry.ToolFailure(name, registry.CodeForbidden, fmt.Sprintf("this connection is read-only, and %s "+
			"changes something: only the tools that read are offered (%s)", name, strings.Join(names(registry.For(o)), ", ")))
	}
	defer func() {
		if p := recover(); p != nil {
			t.log.Error("tool panicked", "tool", name, "panic", p)
			res = registry.ToolFailure(name, registry.CodeInternal, "the tool failed")
		}
		if res == nil {
			res = registry.ToolFailure(name, registry.CodeInternal, "the tool gave no answer")
		}
		t.forModel(res)
	}()
	if args == nil {
		args = registry.Args{}
	}
	return spec.MCP(t, ctx, args)
}

// names are the tools' names.
func names(specs []registry.Spec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// forModel is the step every tool error passes before the model (or an
// external client) reads it: its text goes through ForModel.
func (t *Session) forModel(res *registry.Result) {
	if !res.IsError {
		return
	}
	for i, p := range res.Parts {
		if p.Kind == registry.PartText {
			res.Parts[i].Text = ForModel(p.Text, t.ws.Root)
		}
	}
}

// Call runs one host request under the call timeout (registry.Env).
func (t *Session) Call(ctx context.Context, typ string, args, result any) error {
	return t.callFor(ctx, t.callTimeout, typ, args, result)
}

// CallLong runs one host request under the generation timeout.
func (t *Session) CallLong(ctx context.Context, typ string, args, result any) error {
	return t.callFor(ctx, t.genTimeout, typ, args, result)
}

// callFor runs one host request under timeout: the one place a call is
// bounded (generation waits longer than the rest).
func (t *Session) callFor(ctx context.Context, timeout time.Duration, typ string, args, result any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := t.caller.Call(ctx, typ, args, result)
	t.log.Debug("tool host call", "type", typ, "ms", time.Since(start).Milliseconds(), "err", registry.ErrCode(err))
	return err
}
