// Package tools is the one declaration of botd's tools and owns their
// contract: each tool's arguments and results (FetchMediaArgs,
// FetchMediaResult, …), the call (Request), its typed failure (Error and
// the Code… constants), who answers it (Handler) and what the model is
// shown of it (Result). Each Spec holds a tool's name, its definition
// (Def: description, JSON schema, hints), who is offered
// it, whether a crash may repeat it, its host handler and its model half;
// modelview's Session (which the agent calls directly), the MCP faces
// (mcp: stdio, HTTP), the request types the IPC host accepts (IPCTypes)
// and the host's dispatch (Dispatch) all derive from All. The transports
// carry these types and define none: ipc is files and framing.
//
// Adding a tool is one file plus one line:
//
//  1. Write its file here: a Spec with Name, Def, Offered (when it is not
//     offered to every server), Service, Repeatable, Host (bind of the
//     service's method, e.g. bind(MediaHost.Speak), or serve where the
//     method needs more of the request; its argument and result types
//     live here, beside it) and MCP, its model half (a ModelHandler):
//     read the model's arguments (StringArg, IntArg, BadArgs for a
//     refusal), send the request with Env.Call, and answer text
//     (ToolError for a failed call), as sendMessageMCP does. A new
//     service method is one line of the service's interface (MediaHost,
//     TasksHost).
//  2. Add the Spec to All (one line).
//
// A tool whose model half needs more than a call (the group folder, the
// files it renders for the model) has that half as a method of Env, which
// modelview's Session implements, and names it: MCP: Env.FetchMedia.
//
// TestRegistry (here) and mcp's TestToolsList fail while a registered tool
// lacks a handler on either side.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/botd-dev/botd/groups"
)

// Service is who answers a tool's request on the host.
type Service int

const (
	// Local tools are answered by the tool session itself (the memory
	// tools change files of the group folder it serves); no host call.
	Local Service = iota
	// Media is the host's media service (media.Service).
	Media
	// Tasks is the host's scheduler (scheduler.Scheduler).
	Tasks
	// Messages is the host's history service (chatlog.Service).
	Messages
)

func (s Service) String() string {
	switch s {
	case Local:
		return "local"
	case Media:
		return "media"
	case Tasks:
		return "tasks"
	case Messages:
		return "history"
	}
	return fmt.Sprintf("service(%d)", int(s))
}

// Generate says which generation models are configured
// (media.generation.image, .speech, .video).
type Generate struct {
	Image, Speech, Video bool
}

// Offer is what one MCP server is built for, and so which tools and
// arguments it shows.
type Offer struct {
	// Main is the main group's server: it may name another group.
	Main bool
	// GlobalMemory: the main group's server with a global memory, whose
	// memory tools take scope "global".
	GlobalMemory bool
	// Generate offers the generation tools whose models are configured.
	Generate Generate
	// Internet offers the web tools that are configured.
	Internet Internet
	// ReadOnly offers only the tools whose hints say they change nothing
	// (mcp.http.tokens[].read_only, botd mcp --read-only): no sending, no
	// tasks, no memory writes, no generation. A face built so refuses the
	// others if called (CodeForbidden).
	ReadOnly bool
	// Groups are the group folders one face serves at once (a token's
	// groups: mcp.http.tokens[].groups, botd mcp --group a --group b).
	// With two or more, every tool takes a required group argument naming
	// one of them (DefFor); with one, the face is that group's as before.
	Groups []string
}

// HostFunc answers one request of group g with the service svc (a
// MediaHost or TasksHost, as the Spec's Service says).
type HostFunc func(ctx context.Context, svc any, g *groups.Group, req *Request) (any, *Error)

// Spec declares one tool.
type Spec struct {
	// Name is the tool's name and, for a tool the host answers, its IPC
	// request type.
	Name string
	// Def is the definition (description, hints, arguments' schema)
	// offered to a session built for o.
	Def func(o Offer) Def
	// Offered reports whether a server built for o shows the tool at all;
	// nil is every server.
	Offered func(o Offer) bool
	// Service answers the tool on the host; Local tools have no Host.
	Service Service
	// Repeatable: carrying the request out again after a crash is
	// harmless (a read, or keyed by the request id). A request that is
	// not, caught by a crash, is answered send_unknown and never repeated.
	Repeatable bool
	// Standby: an instance standing by answers it (docs/scaling.md) — it
	// reads the shared database, the media store or the web, and sends
	// nothing to a chat nor changes what the active instance runs. Other
	// host tools are refused there with CodeStandby.
	Standby bool
	// Host answers the request on the host (nil for Local tools).
	Host HostFunc
	// MCP is the tool's model half: the model's arguments into the
	// request, the answer into what the model reads. Every face runs it
	// (modelview.Session.Run).
	MCP ModelHandler

	// Origin is who wrote the words its result carries (trust.go).
	Origin Origin
	// Dials names the argument that is an address botd fetches: a run
	// opens only addresses a person posted or a result showed.
	Dials string
	// Widens says what a call would do beyond the group's own chat and
	// memory ("" for nothing): refused once the run read strangers' words.
	Widens func(c Call) string
	// Needs is the role the asker must have for the call (groups.Role:
	// member, admin, owner); nil is any member. A call the asker's role
	// does not allow is refused with CodeForbidden.
	Needs func(c Call) groups.Role
}

// NeedsAdmin is Needs of a tool only an admin may use.
func NeedsAdmin(Call) groups.Role { return groups.Admin }

// Need is the role c needs of its asker.
func (s *Spec) Need(c Call) groups.Role {
	if s.Needs == nil {
		return groups.Member
	}
	return s.Needs(c)
}

// All is every tool, in the order of the README's tool list. One line a
// tool.
var All = []Spec{
	listMedia, fetchMedia, sendMessage, sendMedia,
	fetchURL, webSearch,
	remember, forget,
	scheduleTask, listTasks, pauseTask, resumeTask, cancelTask,
	generateImage, speak, generateVideo, cancelVideo, listVideos,
	searchMessages, readMessages, listChats,
}

var byName = func() map[string]*Spec {
	m := make(map[string]*Spec, len(All))
	for i := range All {
		if _, dup := m[All[i].Name]; dup {
			panic("tools: " + All[i].Name + " is registered twice")
		}
		m[All[i].Name] = &All[i]
	}
	return m
}()

// Lookup returns the tool named name.
func Lookup(name string) (*Spec, bool) {
	s, ok := byName[name]
	return s, ok
}

// For returns the tools a server built for o offers, in All's order.
func For(o Offer) []Spec {
	var out []Spec
	for _, s := range All {
		if s.OfferedTo(o) {
			out = append(out, s)
		}
	}
	return out
}

// OfferedTo reports whether a server built for o offers s: its own
// Offered, and on a read-only face only a tool whose hints say it changes
// nothing.
func (s Spec) OfferedTo(o Offer) bool {
	if s.Offered != nil && !s.Offered(o) {
		return false
	}
	return !o.ReadOnly || s.Def(o).Hints.ReadOnly
}

// GroupArg is the argument naming the group a call is for, on a face
// serving several (Offer.Groups).
const GroupArg = "group"

// DefFor is s's definition on a face built for o: Def, plus the required
// group argument when the face serves several groups (it replaces the
// main group's optional one, whose meaning it takes over).
func (s Spec) DefFor(o Offer) Def {
	d := s.Def(o)
	if len(o.Groups) < 2 {
		return d
	}
	d.Properties[GroupArg] = map[string]any{"type": "string", "enum": append([]string(nil), o.Groups...),
		"description": "The group (chat) this call is for: one of " + strings.Join(o.Groups, ", ") +
			" (list_chats shows their names)."}
	if !slices.Contains(d.Required, GroupArg) {
		d.Required = append(d.Required, GroupArg)
	}
	return d
}

// IPCTypes is every tool a host service answers, each mapped to whether
// it may be carried out again after a crash: the request types a
// transport's host accepts (ipc.HostOptions.Types).
func IPCTypes() map[string]bool {
	t := map[string]bool{}
	for _, s := range All {
		if s.Service != Local {
			t[s.Name] = s.Repeatable
		}
	}
	return t
}

// Serve answers req with the tool it names, if service answers that tool:
// the dispatch of a host service's Handle.
func Serve(ctx context.Context, service Service, svc any, g *groups.Group, req *Request) (any, *Error) {
	s, ok := byName[req.Type]
	if !ok || s.Service != service || s.Host == nil {
		return nil, Errorf(CodeBadRequest, "unknown request type %q", req.Type)
	}
	return s.Host(ctx, svc, g, req)
}

// Dispatch is the host's Handler: each request goes to the handler of
// the service its tool names.
type Dispatch map[Service]Handler

var _ Handler = Dispatch(nil)

// Handle routes req by its tool's Service.
func (d Dispatch) Handle(ctx context.Context, group string, req *Request) (any, *Error) {
	if s, ok := byName[req.Type]; ok {
		if h, ok := d[s.Service]; ok && s.Service != Local {
			return h.Handle(ctx, group, req)
		}
	}
	return nil, Errorf(CodeBadRequest, "unknown request type %q", req.Type)
}

// serve binds a service method to a HostFunc: the request's arguments are
// decoded strictly into A (an unknown field is a bad request), and svc
// must be an S.
func serve[S, A, R any](f func(svc S, ctx context.Context, g *groups.Group, req *Request, a A) (R, *Error)) HostFunc {
	return func(ctx context.Context, svc any, g *groups.Group, req *Request) (any, *Error) {
		s, ok := svc.(S)
		if !ok {
			return nil, Errorf(CodeInternal, "no host service answers %s", req.Type)
		}
		var a A
		if err := DecodeArgs(req, &a); err != nil {
			return nil, err
		}
		r, herr := f(s, ctx, g, req, a)
		if herr != nil {
			return nil, herr // no typed nil result beside an error
		}
		return r, nil
	}
}

// bind is serve for a service method that takes the decoded arguments
// alone: Host: bind(MediaHost.GenerateImage).
func bind[S, A, R any](m func(S, context.Context, *groups.Group, A) (R, *Error)) HostFunc {
	return serve(func(s S, ctx context.Context, g *groups.Group, _ *Request, a A) (R, *Error) {
		return m(s, ctx, g, a)
	})
}

// fixed is the Def of a tool whose definition is the same for every
// server.
func fixed(name string, opts ...defOption) func(Offer) Def {
	return func(Offer) Def { return newDef(name, opts...) }
}

// requiredText is a string argument that must be given, of 1 to max
// characters.
func requiredText(name, desc string, max int) defOption {
	return withString(name, required(), description(desc), minLength(1), maxLength(max))
}

// optionalText is a string argument of at most max characters.
func optionalText(name, desc string, max int) defOption {
	return withString(name, description(desc), maxLength(max))
}

// DecodeArgs decodes req's arguments into v; unknown fields are refused.
// No arguments at all leave v as it is.
func DecodeArgs(req *Request, v any) *Error {
	if len(req.Args) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(req.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(CodeBadRequest, "bad arguments for %s: %v", req.Type, err)
	}
	return nil
}
