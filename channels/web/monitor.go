package web

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/store"
)

// ChannelState is what the dashboard says about one channel.
type ChannelState struct {
	Name  string
	State string // starting | running | failed | stopped
	Since time.Time
	// LastEvent is when the channel last handed a message to botd.
	LastEvent time.Time
	Events    int64
	// LastError is the newest warning or error the channel logged (or its
	// start-up error), as logged: botd's logs carry no secrets.
	LastError   string
	LastErrorAt time.Time
}

// Monitor watches the channels for the dashboard without their help: it
// sits between them and the sink (every message they deliver), in the log
// handler (every warning they log, by their channel= attribute), and is
// told how each start went.
type Monitor struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*ChannelState
	// inbox says whether the store takes what the channels receive.
	inbox *channels.Inbox
}

// WatchInbox makes the dashboard show b's state: whether the store
// refuses messages, since when, and how many are held unconfirmed.
func (m *Monitor) WatchInbox(b *channels.Inbox) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inbox = b
}

// Inbox is the state of the inbox WatchInbox named (zero without one).
func (m *Monitor) Inbox() channels.InboxStatus {
	if m == nil {
		return channels.InboxStatus{}
	}
	m.mu.Lock()
	b := m.inbox
	m.mu.Unlock()
	return b.Status()
}

// NewMonitor returns an empty monitor.
func NewMonitor() *Monitor { return &Monitor{now: time.Now, m: map[string]*ChannelState{}} }

func (m *Monitor) get(name string) *ChannelState {
	st, ok := m.m[name]
	if !ok {
		st = &ChannelState{Name: name, State: "starting", Since: m.now()}
		m.m[name] = st
	}
	return st
}

// Starting notes a channel that is about to start.
func (m *Monitor) Starting(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.get(name)
	st.State, st.Since = "starting", m.now()
}

// Started notes how a channel's Start went.
func (m *Monitor) Started(name string, err error) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.get(name)
	st.Since = m.now()
	if err != nil {
		st.State = "failed"
		st.LastError, st.LastErrorAt = err.Error(), st.Since
		return
	}
	st.State = "running"
}

// Stopped notes that the channels stopped receiving (shutdown).
func (m *Monitor) Stopped() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range m.m {
		if st.State == "running" {
			st.State, st.Since = "stopped", m.now()
		}
	}
}

// States lists every channel seen, by name.
func (m *Monitor) States() []ChannelState {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ChannelState, 0, len(m.m))
	for _, st := range m.m {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (m *Monitor) event(chat string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.get(store.Channel(chat))
	st.LastEvent = m.now()
	st.Events++
}

func (m *Monitor) problem(name, msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.get(name)
	st.LastError, st.LastErrorAt = msg, m.now()
}

// Sink returns s with every delivery noted as its channel's last event.
func (m *Monitor) Sink(s channels.Sink) channels.Sink {
	if m == nil {
		return s
	}
	return monitoredSink{Sink: s, m: m}
}

type monitoredSink struct {
	channels.Sink
	m *Monitor
}

func (s monitoredSink) Deliver(ctx context.Context, in channels.Inbound) error {
	if err := s.Sink.Deliver(ctx, in); err != nil {
		return err // retried by the channel's Inbox; counted once stored
	}
	s.m.event(in.ChatID)
	return nil
}

// Handler returns h, noting each warning and error logged with a
// channel= attribute as that channel's last error. What h itself logs is
// unchanged.
func (m *Monitor) Handler(h slog.Handler) slog.Handler {
	if m == nil {
		return h
	}
	return &monitorHandler{h: h, m: m}
}

type monitorHandler struct {
	h       slog.Handler
	m       *Monitor
	channel string // from WithAttrs
}

func (h *monitorHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.h.Enabled(ctx, l)
}

func (h *monitorHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		channel, detail := h.channel, ""
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "channel":
				channel = a.Value.String()
			case "err":
				detail = a.Value.String()
			}
			return true
		})
		if channel != "" {
			msg := r.Message
			if detail != "" {
				msg += ": " + detail
			}
			h.m.problem(channel, msg)
		}
	}
	if !h.h.Enabled(ctx, r.Level) {
		return nil
	}
	return h.h.Handle(ctx, r)
}

func (h *monitorHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := &monitorHandler{h: h.h.WithAttrs(as), m: h.m, channel: h.channel}
	for _, a := range as {
		if a.Key == "channel" {
			c.channel = a.Value.String()
		}
	}
	return c
}

func (h *monitorHandler) WithGroup(name string) slog.Handler {
	return &monitorHandler{h: h.h.WithGroup(name), m: h.m, channel: h.channel}
}
