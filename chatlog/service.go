package chatlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
)

// Groups is where the service finds the registered groups (groups.Set).
type Groups interface {
	ByFolder(folder string) (*groups.Group, bool)
	All() []*groups.Group
}

// Service answers the conversation tools (search_messages, read_messages,
// list_chats) for the groups' MCP servers: an tools.Handler. Which chats a
// call reads is decided here, in one place:
//
//   - a group reads its own chats (the chat and its aliases);
//   - the main group may name any registered group;
//   - another group naming a group not its own is refused (forbidden).
type Service struct {
	log    *Log
	groups Groups
	loc    *time.Location
	slog   *slog.Logger
}

var (
	_ tools.Handler      = (*Service)(nil)
	_ tools.MessagesHost = (*Service)(nil)
)

// NewService answers the tools from st's messages; times are read and
// shown in loc.
func NewService(st *store.Store, gs Groups, loc *time.Location, log *slog.Logger) *Service {
	if loc == nil {
		loc = time.Local
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{log: New(st), groups: gs, loc: loc, slog: log}
}

// Handle answers the requests of group (the folder the request came from,
// or the group of an in-process caller).
func (s *Service) Handle(ctx context.Context, group string, req *tools.Request) (result any, herr *tools.Error) {
	defer func() {
		if p := recover(); p != nil {
			s.slog.Error("chatlog: handler panicked", "group", group, "type", req.Type, "panic", p)
			result, herr = nil, tools.Errorf(tools.CodeInternal, "the host failed handling %s", req.Type)
		}
	}()
	caller, ok := s.groups.ByFolder(group)
	if !ok {
		return nil, tools.Errorf(tools.CodeForbidden, "%q is not a registered group", group)
	}
	return tools.Serve(ctx, tools.Messages, s, caller, req)
}

// target is the group a call reads: the caller's own, or for the main
// group the one it names.
func (s *Service) target(caller *groups.Group, named string) (*groups.Group, *tools.Error) {
	named = strings.TrimSpace(named)
	if named == "" || named == caller.Folder {
		return caller, nil
	}
	if !caller.Main {
		return nil, tools.Errorf(tools.CodeForbidden, "this group (%s) can only read its own chat; leave group out", caller.Folder)
	}
	g, ok := s.groups.ByFolder(named)
	if !ok {
		var names []string
		for _, g := range s.groups.All() {
			names = append(names, g.Folder)
		}
		slices.Sort(names)
		return nil, tools.Errorf(tools.CodeNotFound, "no registered group %q; the groups are: %s", named, strings.Join(names, ", "))
	}
	return g, nil
}

// SearchMessages is search_messages.
func (s *Service) SearchMessages(ctx context.Context, caller *groups.Group, a tools.SearchMessagesArgs) (tools.MessagesResult, *tools.Error) {
	g, herr := s.target(caller, a.Group)
	if herr != nil {
		return tools.MessagesResult{}, herr
	}
	q := Query{Chats: g.ChatIDs(), Text: a.Query, Sender: a.Sender, Limit: a.Limit}
	var err error
	if q.From, err = s.parseTime(a.From, false); err != nil {
		return tools.MessagesResult{}, tools.Errorf(tools.CodeBadRequest, "from: %v", err)
	}
	if q.To, err = s.parseTime(a.To, true); err != nil {
		return tools.MessagesResult{}, tools.Errorf(tools.CodeBadRequest, "to: %v", err)
	}
	ms, err := s.log.Search(ctx, q)
	if err != nil {
		return tools.MessagesResult{}, s.fail(err)
	}
	return s.result(g, ms), nil
}

// ReadMessages is read_messages.
func (s *Service) ReadMessages(ctx context.Context, caller *groups.Group, a tools.ReadMessagesArgs) (tools.MessagesResult, *tools.Error) {
	g, herr := s.target(caller, a.Group)
	if herr != nil {
		return tools.MessagesResult{}, herr
	}
	w := Window{Chats: g.ChatIDs(), Dir: Before, Limit: a.Limit}
	var given []string
	point := ""
	for _, p := range []struct {
		name, v string
		dir     Direction
	}{{"around", a.Around, Around}, {"before", a.Before, Before}, {"after", a.After, After}} {
		if v := strings.TrimSpace(p.v); v != "" {
			given = append(given, p.name)
			w.Dir, point = p.dir, v
		}
	}
	if len(given) > 1 {
		return tools.MessagesResult{}, tools.Errorf(tools.CodeBadRequest, "give at most one of around, before and after, not %s", strings.Join(given, " and "))
	}
	if point != "" {
		// A time reads as one; anything else is a message id.
		if t, err := s.parseTime(point, false); err == nil {
			w.Time = t
		} else {
			w.ID = point
		}
	}
	ms, err := s.log.Read(ctx, w)
	if err != nil {
		return tools.MessagesResult{}, s.fail(err)
	}
	return s.result(g, ms), nil
}

// ListChats is list_chats: the caller's group, or every group for the
// main one.
func (s *Service) ListChats(ctx context.Context, caller *groups.Group, _ tools.ListChatsArgs) (tools.ListChatsResult, *tools.Error) {
	gs := []*groups.Group{caller}
	if caller.Main {
		gs = s.groups.All()
	}
	var ids []string
	for _, g := range gs {
		ids = append(ids, g.ChatIDs()...)
	}
	chats, err := s.log.Chats(ctx, ids)
	if err != nil {
		return tools.ListChatsResult{}, s.fail(err)
	}
	last := map[string]time.Time{}
	names := map[string]string{}
	for _, c := range chats {
		if c.LastMessageAt.After(last[c.ID]) {
			last[c.ID] = c.LastMessageAt
		}
		names[c.ID] = c.Name
	}
	res := tools.ListChatsResult{Timezone: s.loc.String(), Chats: []tools.ChatInfo{}}
	type row struct {
		info tools.ChatInfo
		at   time.Time
	}
	var rows []row
	for _, g := range gs {
		ci := tools.ChatInfo{Group: g.Folder, Name: g.Name, Network: store.Channel(g.Chat), Main: g.Main}
		if ci.Name == "" {
			ci.Name = names[g.Chat]
		}
		var at time.Time
		for _, id := range g.ChatIDs() {
			if t := last[id]; t.After(at) {
				at = t
			}
		}
		if at.UnixMilli() > 0 {
			ci.LastActivity = formatTime(at, s.loc)
		}
		rows = append(rows, row{ci, at})
	}
	// Most recently active first, as a chat list is.
	slices.SortStableFunc(rows, func(a, b row) int { return b.at.Compare(a.at) })
	for _, r := range rows {
		res.Chats = append(res.Chats, r.info)
	}
	return res, nil
}

func (s *Service) result(g *groups.Group, ms []store.Message) tools.MessagesResult {
	res := tools.MessagesResult{Group: g.Folder, Timezone: s.loc.String(), Messages: make([]tools.ChatMessage, 0, len(ms))}
	for _, m := range ms {
		sender := m.SenderName
		if sender == "" {
			sender = m.SenderID
		}
		res.Messages = append(res.Messages, tools.ChatMessage{ID: m.ID, Time: formatTime(m.Time, s.loc), Sender: sender,
			FromAssistant: m.FromMe || m.IsBot, Text: tools.ClipKeepingRefs(m.Text, tools.MaxMessageRunes)})
	}
	return res
}

func (s *Service) fail(err error) *tools.Error {
	switch {
	case errors.Is(err, ErrEmptyQuery):
		return tools.Errorf(tools.CodeBadRequest, "%v", err)
	case errors.Is(err, ErrNotFound):
		return tools.Errorf(tools.CodeNotFound, "%v: give a message id search_messages or read_messages showed, or a time", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return tools.Errorf(tools.CodeInternal, "the read was cut short: %v", err)
	}
	// The database's words stay in the log: they may name the server.
	s.slog.Error("chatlog: reading the messages failed", "err", err)
	return tools.Errorf(tools.CodeInternal, "reading the stored messages failed")
}

// timeLayout is what the tools show: the minute, with the offset, so a
// time shown can be passed back.
const timeLayout = "2006-01-02T15:04Z07:00"

func formatTime(t time.Time, loc *time.Location) string { return t.In(loc).Format(timeLayout) }

// parseTime reads a time the tools take: RFC 3339 (seconds optional), or
// a date or date and minute in loc. A bare date as an end (to) is the end
// of that day.
func (s *Service) parseTime(v string, end bool) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, timeLayout} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, v, s.loc); err == nil {
			return t, nil
		}
	}
	if t, err := time.ParseInLocation("2006-01-02", v, s.loc); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: give RFC 3339 (2026-11-18T14:00:00+01:00) or a date (2026-11-18)", v)
}
