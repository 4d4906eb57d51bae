// Package mcp is botd's MCP faces: the server of one group for external
// clients (stdio for botd mcp, Streamable HTTP for botd mcp --http), whose
// tools are the registry's (package tools) as modelview's Session runs
// them, reaching the host through the IPC files. It adds only what MCP
// itself needs: registration, the protocol's content shapes and, for
// clients on other machines, resource links to fetched files.
package mcp

import (
	"context"
	"log/slog"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/modelview"
	registry "github.com/botd-dev/botd/tools"
)

// ServerName is the MCP server name announced at initialize.
const ServerName = "botd"

// DefaultInlineMaxBytes, DefaultCallTimeout and DefaultGenerateTimeout
// are modelview's (see there).
const (
	DefaultInlineMaxBytes  = modelview.DefaultInlineMaxBytes
	DefaultCallTimeout     = modelview.DefaultCallTimeout
	DefaultGenerateTimeout = modelview.DefaultGenerateTimeout
)

// Caller sends one request to the host and decodes its result: an
// *ipc.Client of the group's IPC folder, or a fake host in tests.
type Caller = registry.Caller

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

// tools is one group's server state: the session that runs the tools,
// and the links handed to remote clients.
type tools struct {
	s     *modelview.Session
	ws    groups.Workspace
	log   *slog.Logger
	links *linkTable // nil: paths only (stdio on the same machine)
}

// NewServer builds the MCP server of one group. It does no I/O: the group
// folder may not exist yet, and initialize/tools/list never wait on the
// host.
func NewServer(opts Options) (*server.MCPServer, error) {
	s, err := modelview.New(modelview.Options{GroupDir: opts.GroupDir, InlineMaxBytes: opts.InlineMaxBytes, Caller: opts.Caller,
		Log: opts.Log, CallTimeout: opts.CallTimeout, GenerateTimeout: opts.GenerateTimeout, GlobalDir: opts.GlobalDir,
		Main: opts.Main, Generate: opts.Generate, Internet: opts.Internet, Parse: opts.Parse})
	if err != nil {
		return nil, err
	}
	t := &tools{s: s, ws: groups.Workspace{Root: s.Dir()}, log: s.Log()}
	if opts.Links != nil {
		t.links = newLinkTable(*opts.Links)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	srv := server.NewMCPServer(ServerName, version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithInstructions("botd media tools for one chat group. Attachments in messages appear as "+
			"placeholders like [Image: name, size, mime, ref:tg_x]; pass the ref to fetch_media to see the "+
			"content. list_media shows what is available; send_message and send_media reply to the group's chat. "+
			"remember and forget keep notes in the group's memory, which is shown in every conversation."),
	)
	t.register(srv)
	return srv, nil
}

// register adds the registry's tools the session offers, each answered by
// the session and shown in MCP's shapes.
func (t *tools) register(srv *server.MCPServer) {
	o := t.s.Offer()
	for _, spec := range t.s.Tools() {
		name := spec.Name
		srv.AddTool(mcpTool(spec.Def(o)), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			r := t.s.Run(ctx, name, req.GetArguments())
			out := toMCP(r)
			if t.links != nil && r.Fetched != nil {
				t.linkResult(ctx, out, *r.Fetched)
			}
			return out, nil
		})
	}
	t.registerLinks(srv)
}

// mcpTool is a tool's definition in MCP's shape, its hints said outright.
func mcpTool(d registry.Def) mcpgo.Tool {
	h := d.Hints
	return mcpgo.Tool{
		Name:        d.Name,
		Description: d.Description,
		InputSchema: mcpgo.ToolInputSchema{Type: "object", Properties: d.Properties, Required: d.Required},
		Annotations: mcpgo.ToolAnnotation{ReadOnlyHint: &h.ReadOnly, DestructiveHint: &h.Destructive,
			IdempotentHint: &h.Idempotent, OpenWorldHint: &h.OpenWorld},
	}
}

// toMCP is a tool's result in MCP's content shapes.
func toMCP(r *registry.Result) *mcpgo.CallToolResult {
	out := &mcpgo.CallToolResult{Content: make([]mcpgo.Content, 0, len(r.Parts)), IsError: r.IsError}
	for _, p := range r.Parts {
		out.Content = append(out.Content, contentOf(p))
	}
	return out
}

// contentOf is one part in MCP's shape.
func contentOf(p registry.Part) mcpgo.Content {
	switch p.Kind {
	case registry.PartImage:
		return mcpgo.NewImageContent(p.Data, p.MIME)
	case registry.PartAudio:
		return mcpgo.NewAudioContent(p.Data, p.MIME)
	case registry.PartLink:
		return mcpgo.NewResourceLink(p.URI, p.Name, p.Description, p.MIME)
	case registry.PartTextResource:
		return mcpgo.NewEmbeddedResource(mcpgo.TextResourceContents{URI: p.URI, MIMEType: p.MIME, Text: p.Text})
	case registry.PartBlobResource:
		return mcpgo.NewEmbeddedResource(mcpgo.BlobResourceContents{URI: p.URI, MIMEType: p.MIME, Blob: p.Data})
	}
	return mcpgo.NewTextContent(p.Text)
}
