package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	registry "github.com/botd-dev/botd/tools"
)

// Each group the server serves is a resource, botd://chat/<folder>:
// resources/read answers its recent conversation as read_messages shows
// it (each message escaped in its element), and a client that subscribed
// hears notifications/resources/updated when a message is stored in it
// (Server.ChatUpdated, which the watch of ChatMarks calls).

// ChatScheme prefixes each group's conversation resource.
const ChatScheme = "botd://chat/"

// ChatResourceMessages is how many of the newest messages resources/read
// of a chat answers (read_messages pages further back).
const ChatResourceMessages = 50

// registerChats lists the resource of each group served.
func (t *tools) registerChats(srv *server.MCPServer) {
	for _, g := range t.groups {
		uri := ChatScheme + g.folder
		srv.AddResource(mcpgo.NewResource(uri, "chat "+g.folder,
			mcpgo.WithResourceDescription("The recent conversation of group "+g.folder+" (its newest messages, in "+
				"order; read_messages pages back). Subscribe to hear when a message arrives."),
			mcpgo.WithMIMEType("text/plain")),
			func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				return t.readChat(ctx, g, uri)
			})
	}
}

// readChat answers resources/read of a group's chat: read_messages'
// answer, through the same session (and so the same host service and
// escaping) as the tool.
func (t *tools) readChat(ctx context.Context, g *served, uri string) ([]mcpgo.ResourceContents, error) {
	r := g.s.Run(ctx, registry.ReadMessages, registry.Args{"limit": ChatResourceMessages})
	var b strings.Builder
	for _, p := range r.Parts {
		if p.Kind == registry.PartText {
			b.WriteString(p.Text)
		}
	}
	if r.IsError {
		return nil, errors.New(b.String())
	}
	return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: b.String()}}, nil
}

// subscriptions are the chat resources each session subscribed to. mcp-go
// answers resources/subscribe (protocols up to 2025-11-25) and
// subscriptions/listen (2026-07-28) and leaves the bookkeeping to the
// server (its hooks): a listen stream's URIs hold while it is open, and a
// session that ends takes its subscriptions along.
type subscriptions struct {
	log   *slog.Logger
	mu    sync.Mutex
	known func(uri string) bool
	by    map[subKey]map[string]bool // → URIs
}

// subKey is a session's resources/subscribe set (listen nil) or one of
// its subscriptions/listen streams (listen: the request's id).
type subKey struct {
	session string
	listen  any
}

func newSubscriptions() *subscriptions {
	return &subscriptions{by: map[subKey]map[string]bool{}}
}

// add records uris for k, the ones this server serves only (a URI it
// does not serve never changes).
func (s *subscriptions) add(k subKey, uris ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range uris {
		if !s.known(u) {
			continue
		}
		if s.by[k] == nil {
			s.by[k] = map[string]bool{}
		}
		s.by[k][u] = true
	}
}

func (s *subscriptions) hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcpgo.SubscribeRequest, _ *mcpgo.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil {
			s.add(subKey{session: sess.SessionID()}, req.Params.URI)
		}
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcpgo.UnsubscribeRequest, _ *mcpgo.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.by[subKey{session: sess.SessionID()}], req.Params.URI)
		}
	})
	h.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, req *mcpgo.SubscriptionsListenRequest) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil && id != nil {
			s.add(subKey{session: sess.SessionID(), listen: fmt.Sprint(id)}, req.Params.Notifications.ResourceSubscriptions...)
			s.log.Debug("mcp: subscriptions/listen", "resources", len(req.Params.Notifications.ResourceSubscriptions))
		}
	})
	// The stream ends with the listen request: answered or failed.
	end := func(ctx context.Context, id any, method mcpgo.MCPMethod) {
		if method != mcpgo.MethodSubscriptionsListen {
			return
		}
		if sess := server.ClientSessionFromContext(ctx); sess != nil && id != nil {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.by, subKey{session: sess.SessionID(), listen: fmt.Sprint(id)})
		}
	}
	h.AddOnSuccess(func(ctx context.Context, id any, method mcpgo.MCPMethod, _ any, _ any) { end(ctx, id, method) })
	h.AddOnError(func(ctx context.Context, id any, method mcpgo.MCPMethod, _ any, _ error) { end(ctx, id, method) })
	h.AddOnUnregisterSession(func(_ context.Context, sess server.ClientSession) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for k := range s.by {
			if k.session == sess.SessionID() {
				delete(s.by, k)
			}
		}
	})
	return h
}

// subscribers are the sessions subscribed to uri, each once.
func (s *subscriptions) subscribers(uri string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, uris := range s.by {
		if uris[uri] && !slices.Contains(out, k.session) {
			out = append(out, k.session)
		}
	}
	return out
}

// ChatUpdated tells every session subscribed to the chat of folder that
// it changed. A folder the server does not serve is ignored.
func (s *Server) ChatUpdated(folder string) {
	if _, ok := s.t.byFolder[folder]; !ok {
		return
	}
	uri := ChatScheme + folder
	subs := s.t.subs.subscribers(uri)
	s.t.log.Debug("mcp: chat updated", "group", folder, "subscribers", len(subs))
	for _, id := range subs {
		if err := s.SendNotificationToSpecificClient(id, mcpgo.MethodNotificationResourceUpdated, map[string]any{"uri": uri}); err != nil {
			s.t.log.Debug("mcp: chat update not delivered", "group", folder, "err", err)
		}
	}
}
