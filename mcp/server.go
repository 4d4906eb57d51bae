// Package mcp is the agent-facing side of botd: an MCP server whose tools
// (list_media, fetch_media, send_message, send_media) turn into IPC requests
// that the botd host answers. It never touches channels or the database;
// what it reaches directly is the group folder the host writes fetched
// media into, whose memory file remember and forget change (and, for the
// main group only, the global memory).
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/ipc"
	registry "github.com/botd-dev/botd/tools"
)

// ServerName is the MCP server name announced at initialize.
const ServerName = "botd"

// DefaultInlineMaxBytes applies when Options.InlineMaxBytes is zero; it
// matches media.inline_max_bytes' default.
const DefaultInlineMaxBytes = 1 << 20

// DefaultCallTimeout bounds one IPC call. Fetching a large video through a
// slow channel can take a while, so it is generous; when it passes, a call
// the host took answers in_progress (with the download's figures) and
// only a call no host ever looked at answers ErrNoHost.
const DefaultCallTimeout = 2 * time.Minute

// DefaultGenerateTimeout bounds a generate_image or speak call, which can
// take the provider minutes; it stays below ipc.MaxRequestAge, past which
// the host would refuse a request it had not yet claimed.
const DefaultGenerateTimeout = 8 * time.Minute

// Caller sends one IPC request and decodes its result. *ipc.Client
// satisfies it; tests use a fake host.
type Caller interface {
	Call(ctx context.Context, typ string, args, result any) error
}

var _ Caller = (*ipc.Client)(nil)

// Options configures the MCP server of one group.
type Options struct {
	// GroupDir is the absolute path of groups/<folder>; fetched media lives
	// below it and send_media paths are relative to it.
	GroupDir string
	// InlineMaxBytes is the largest file sent inline (image content or
	// embedded resource), and the budget of a preview. Zero means
	// DefaultInlineMaxBytes.
	InlineMaxBytes int64
	// Caller reaches the host (an *ipc.Client for the group's IPC folder).
	Caller Caller
	// Version is announced at initialize.
	Version string
	// Log receives diagnostics; nil means slog.Default(). Never stdout.
	Log *slog.Logger
	// CallTimeout bounds each IPC call; zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// GenerateTimeout bounds generate_image and speak calls instead; zero
	// means DefaultGenerateTimeout, and it is never below CallTimeout.
	GenerateTimeout time.Duration
	// GlobalDir is the absolute path of the global memory's folder
	// (groups.GlobalWorkspace(groups_dir).Root), which every group reads.
	// Empty: remember and forget refuse scope "global".
	GlobalDir string
	// Main is set for the main group's server, the only one whose
	// remember and forget may change the global memory.
	Main bool
	// Links, when set, hands every fetched file to the client as a
	// short-lived resource too (and a presigned URL with the S3 store):
	// for clients on other machines, which cannot open the host path.
	Links *LinkOptions
	// Generate offers the generation tools whose models are configured.
	Generate GenerateTools
	// Internet offers the web tools that are configured (fetch_url,
	// web_search).
	Internet registry.Internet
	// Parse bounds each child process that reads a member's file (a
	// document's text, an image's preview, a video's stills): the
	// media.parse settings; zero fields take box's defaults.
	Parse box.Limits
}

// GenerateTools says which generation models are configured
// (media.generation.image, .speech, .video); the registry offers each
// generation tool only when its model is.
type GenerateTools = registry.Generate

// InternetTools says which web tools are configured (internet.fetch,
// internet.search).
type InternetTools = registry.Internet

// tools holds the state the tool handlers share.
type tools struct {
	ws          groups.Workspace
	global      groups.Workspace // Root "" when there is no global memory
	main        bool
	inlineMax   int64
	caller      Caller
	log         *slog.Logger
	callTimeout time.Duration
	genTimeout  time.Duration // generate_image and speak
	links       *linkTable    // nil: paths only (stdio on the same machine)
	gen         GenerateTools
	internet    registry.Internet
	parse       box.Limits
}

// NewServer builds the MCP server of one group. It does no I/O: the group
// folder may not exist yet, and initialize/tools/list never wait on the
// host.
func NewServer(opts Options) (*server.MCPServer, error) {
	t, err := newTools(opts)
	if err != nil {
		return nil, err
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	s := server.NewMCPServer(ServerName, version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithToolHandlerMiddleware(t.errorsForModel),
		server.WithInstructions("botd media tools for one chat group. Attachments in messages appear as "+
			"placeholders like [Image: name, size, mime, ref:tg_x]; pass the ref to fetch_media to see the "+
			"content. list_media shows what is available; send_message and send_media reply to the group's chat. "+
			"remember and forget keep notes in the group's memory, which is shown in every conversation."),
	)
	if err := t.register(s); err != nil {
		return nil, err
	}
	return s, nil
}

func newTools(opts Options) (*tools, error) {
	if opts.Caller == nil {
		return nil, errors.New("mcp server: no Caller")
	}
	if opts.GroupDir == "" || !filepath.IsAbs(opts.GroupDir) {
		return nil, fmt.Errorf("mcp server: group dir %q must be an absolute path", opts.GroupDir)
	}
	if opts.GlobalDir != "" {
		if !filepath.IsAbs(opts.GlobalDir) {
			return nil, fmt.Errorf("mcp server: global dir %q must be an absolute path", opts.GlobalDir)
		}
		if filepath.Clean(opts.GlobalDir) == filepath.Clean(opts.GroupDir) {
			return nil, fmt.Errorf("mcp server: global dir %q is the group dir", opts.GlobalDir)
		}
	}
	t := &tools{
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
	}
	if opts.GlobalDir != "" {
		t.global = groups.Workspace{Root: filepath.Clean(opts.GlobalDir)}
	}
	if opts.Links != nil {
		t.links = newLinkTable(*opts.Links)
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

// offer is what this server is built for, in the registry's terms.
func (t *tools) offer() registry.Offer {
	return registry.Offer{Main: t.main, GlobalMemory: t.main && t.global.Root != "", Generate: t.gen, Internet: t.internet}
}

// register adds the registry's tools this server offers.
func (t *tools) register(s *server.MCPServer) error {
	o := t.offer()
	for _, spec := range registry.For(o) {
		h := spec.MCP
		if h == nil {
			return fmt.Errorf("mcp server: tool %s has no MCP handler", spec.Name)
		}
		s.AddTool(spec.Def(o), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return h(t, ctx, req)
		})
	}
	t.registerLinks(s)
	return nil
}

var _ registry.Env = (*tools)(nil)

// Call runs one IPC request under the call timeout.
func (t *tools) Call(ctx context.Context, typ string, args, result any) error {
	return t.callFor(ctx, t.callTimeout, typ, args, result)
}

// CallLong runs one IPC request under the generation timeout.
func (t *tools) CallLong(ctx context.Context, typ string, args, result any) error {
	return t.callFor(ctx, t.genTimeout, typ, args, result)
}

// callFor runs one IPC request under timeout: the one place a call is
// bounded (generation waits longer than the rest).
func (t *tools) callFor(ctx context.Context, timeout time.Duration, typ string, args, result any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := t.caller.Call(ctx, typ, args, result)
	t.log.Debug("mcp ipc call", "type", typ, "ms", time.Since(start).Milliseconds(), "err", registry.ErrCode(err))
	return err
}

// errorsForModel is the step every tool error passes before the model (or
// an external client) reads it: its text goes through ForModel.
func (t *tools) errorsForModel(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := next(ctx, req)
		if res == nil || !res.IsError {
			return res, err
		}
		for i, c := range res.Content {
			if tc, ok := c.(mcpgo.TextContent); ok {
				tc.Text = ForModel(tc.Text, t.ws.Root)
				res.Content[i] = tc
			}
		}
		return res, err
	}
}
