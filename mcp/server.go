// Package mcp is botd's MCP faces: the server of one client's groups for external
// clients (stdio for botd mcp, Streamable HTTP for botd mcp --http), whose
// tools are the registry's (package tools) as modelview's Session runs
// them, reaching the host through the IPC files. It adds only what MCP
// itself needs: registration, the protocol's content shapes and, for
// clients on other machines, resource links to fetched files.
package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
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

// Options configures the MCP server of one client: one group, or several
// (a token's groups, botd mcp --group a --group b).
type Options struct {
	// Groups are the groups the server serves, in the order the client
	// was given them. Empty: the one group of GroupDir, Caller and Main.
	Groups []Group
	// GroupDir is the absolute path of groups/<folder>; fetched media lives
	// below it and send_media paths are relative to it. (One group; see
	// Groups.)
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
	// remember and forget may change the global memory. (One group; see
	// Groups.)
	Main bool
	// ReadOnly offers only the tools that change nothing and refuses the
	// others: no send_message, send_media, tasks, memory writes or
	// generation (mcp.http.tokens[].read_only, botd mcp --read-only).
	ReadOnly bool
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

// Group is one group a server serves.
type Group struct {
	// Folder is the group's folder name: the group argument of the tools
	// and the name in its chat resource (botd://chat/<folder>).
	Folder string
	// Dir is the absolute path of groups/<folder>.
	Dir string
	// Caller reaches the host for this group: the IPC client of this
	// group's IPC folder, and no other's.
	Caller Caller
	// Main is set for the main group.
	Main bool
}

// GenerateTools says which generation models are configured
// (media.generation.image, .speech, .video); the registry offers each
// generation tool only when its model is.
type GenerateTools = registry.Generate

// InternetTools says which web tools are configured (internet.fetch,
// internet.search).
type InternetTools = registry.Internet

// tools is one client's server state: a session per group that runs the
// tools, and the links handed to remote clients.
type tools struct {
	groups   []*served // in the order given; the first is the default of nothing: see pick
	byFolder map[string]*served
	offer    registry.Offer
	log      *slog.Logger
	links    *linkTable // nil: paths only (stdio on the same machine)
	subs     *subscriptions
}

// served is one group of the server.
type served struct {
	folder string
	s      *modelview.Session
	ws     groups.Workspace
}

// Server is the MCP server of one client, with what it serves.
type Server struct {
	*server.MCPServer
	t *tools
}

// Folders are the groups the server serves, in order.
func (s *Server) Folders() []string { return s.t.folders() }

// NewServer builds the MCP server of one client. It does no I/O: the group
// folders may not exist yet, and initialize/tools/list never wait on the
// host.
func NewServer(opts Options) (*Server, error) {
	gs := opts.Groups
	if len(gs) == 0 {
		gs = []Group{{Folder: filepath.Base(opts.GroupDir), Dir: opts.GroupDir, Caller: opts.Caller, Main: opts.Main}}
	}
	t := &tools{byFolder: map[string]*served{}, subs: newSubscriptions()}
	t.subs.known = func(uri string) bool {
		f, ok := strings.CutPrefix(uri, ChatScheme)
		_, served := t.byFolder[f]
		return ok && served
	}
	for _, g := range gs {
		if _, dup := t.byFolder[g.Folder]; dup || g.Folder == "" {
			return nil, fmt.Errorf("mcp server: group %q given twice or empty", g.Folder)
		}
		s, err := modelview.New(modelview.Options{GroupDir: g.Dir, InlineMaxBytes: opts.InlineMaxBytes, Caller: g.Caller,
			Log: opts.Log, CallTimeout: opts.CallTimeout, GenerateTimeout: opts.GenerateTimeout, GlobalDir: opts.GlobalDir,
			Main: g.Main, Generate: opts.Generate, Internet: opts.Internet, Parse: opts.Parse, ReadOnly: opts.ReadOnly})
		if err != nil {
			return nil, err
		}
		sv := &served{folder: g.Folder, s: s, ws: groups.Workspace{Root: s.Dir()}}
		t.groups = append(t.groups, sv)
		t.byFolder[g.Folder] = sv
		// The tools shown are those of any group served: a call for a
		// group whose session does not offer one is refused there.
		o := s.Offer()
		if len(t.groups) == 1 {
			t.offer = o
		}
		t.offer.Main = t.offer.Main || o.Main
		t.offer.GlobalMemory = t.offer.GlobalMemory || o.GlobalMemory
	}
	t.log = t.groups[0].s.Log()
	t.subs.log = t.log
	if len(t.groups) > 1 {
		for _, g := range t.groups {
			t.offer.Groups = append(t.offer.Groups, g.folder)
		}
	}
	if opts.Links != nil {
		t.links = newLinkTable(*opts.Links)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	instructions := "botd media tools for one chat group. Attachments in messages appear as " +
		"placeholders like [Image: name, size, mime, ref:tg_x]; pass the ref to fetch_media to see the " +
		"content. list_media shows what is available; send_message and send_media reply to the group's chat. " +
		"remember and forget keep notes in the group's memory, which is shown in every conversation."
	if len(t.groups) > 1 {
		instructions = "botd tools for the chat groups " + strings.Join(t.offer.Groups, ", ") + ": every tool but " +
			"list_chats takes the group it is for. Attachments in messages appear as placeholders like [Image: name, " +
			"size, mime, ref:tg_x]; pass the ref to fetch_media (of the same group) to see the content."
	}
	if opts.ReadOnly {
		instructions += " This connection is read-only: nothing can be sent or changed."
	}
	instructions += " Each group's recent conversation is the resource " + ChatScheme + "<group>; subscribe to it to hear of new messages."
	srv := server.NewMCPServer(ServerName, version,
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithRecovery(),
		server.WithHooks(t.subs.hooks()),
		server.WithInstructions(instructions),
	)
	t.register(srv)
	t.registerChats(srv)
	return &Server{MCPServer: srv, t: t}, nil
}

// register adds the registry's tools the server offers, each answered by
// the session of the group it is for and shown in MCP's shapes.
func (t *tools) register(srv *server.MCPServer) {
	for _, spec := range registry.For(t.offer) {
		name := spec.Name
		def := spec.DefFor(t.offer)
		if name == registry.ListChats && len(t.groups) > 1 {
			// The one tool about which groups there are: it answers for
			// all the server's groups at once.
			srv.AddTool(mcpTool(spec.Def(t.offer)), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return toMCP(t.listChats(ctx)), nil
			})
			continue
		}
		srv.AddTool(mcpTool(def), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			g, args, refused := t.pick(name, req.GetArguments())
			if refused != nil {
				return toMCP(refused), nil
			}
			r := g.s.Run(ctx, name, args)
			out := toMCP(r)
			if t.links != nil && r.Fetched != nil {
				t.linkResult(ctx, g, out, *r.Fetched)
			}
			return out, nil
		})
	}
	t.registerLinks(srv)
}

// pick is the group a call is for: the one its group argument names
// among the server's, or with none the server's only group (a server of
// several requires it). A group outside the server's is refused with
// forbidden — except on a one-group server whose tool takes a group of
// its own (the main group's conversation tools), where the host decides.
// The argument is taken out when it chose the group: each group's
// session reads its own.
func (t *tools) pick(tool string, args registry.Args) (*served, registry.Args, *registry.Result) {
	v, given := args[registry.GroupArg]
	if !given || v == nil {
		if len(t.groups) == 1 {
			return t.groups[0], args, nil
		}
		return nil, nil, registry.BadArgs(tool, "group is required: one of %s", strings.Join(t.offer.Groups, ", "))
	}
	name, _ := v.(string)
	if g, ok := t.byFolder[name]; ok {
		out := make(registry.Args, len(args))
		for k, a := range args {
			if k != registry.GroupArg {
				out[k] = a
			}
		}
		return g, out, nil
	}
	if len(t.groups) == 1 {
		g := t.groups[0]
		if spec, ok := registry.Lookup(tool); ok {
			if _, own := spec.Def(g.s.Offer()).Properties[registry.GroupArg]; own {
				return g, args, nil
			}
		}
	}
	return nil, nil, registry.ToolFailure(tool, registry.CodeForbidden, fmt.Sprintf("group %q is not one this "+
		"connection may reach; it may reach %s", registry.OneLine(fmt.Sprint(v), 64), strings.Join(t.folders(), ", ")))
}

// folders are the server's groups, in order.
func (t *tools) folders() []string {
	out := make([]string, len(t.groups))
	for i, g := range t.groups {
		out[i] = g.folder
	}
	return out
}

// listChats is list_chats of a server of several groups: each group's
// answer, joined, and only the server's groups (a main group's answer
// names every group, which this connection may not reach).
func (t *tools) listChats(ctx context.Context) *registry.Result {
	var all registry.ListChatsResult
	seen := map[string]bool{}
	for _, g := range t.groups {
		var res registry.ListChatsResult
		if err := g.s.Call(ctx, registry.ListChats, registry.ListChatsArgs{}, &res); err != nil {
			r := registry.ToolError(registry.ListChats, err)
			for i, p := range r.Parts {
				r.Parts[i].Text = modelview.ForModel(p.Text, g.s.Dir())
			}
			return r
		}
		all.Timezone = res.Timezone
		for _, c := range res.Chats {
			if _, ok := t.byFolder[c.Group]; ok && !seen[c.Group] {
				seen[c.Group] = true
				all.Chats = append(all.Chats, c)
			}
		}
	}
	// Most recently active first, as each answer is.
	slices.SortStableFunc(all.Chats, func(a, b registry.ChatInfo) int { return strings.Compare(b.LastActivity, a.LastActivity) })
	return registry.ListChatsText(all)
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
