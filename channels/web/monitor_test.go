package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
)

func TestMonitor(t *testing.T) {
	m := NewMonitor()
	var logs bytes.Buffer
	log := slog.New(m.Handler(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError})))

	m.Starting("telegram")
	m.Started("telegram", nil)
	m.Starting("whatsapp")
	m.Started("whatsapp", errors.New("whatsapp: logged out; run botd whatsapp login"))

	sink := m.Sink(chantest.NewSink("telegram:-1"))
	sink.Deliver(context.Background(), channels.Inbound{ChatID: "telegram:-1", ID: "1"})
	sink.Deliver(context.Background(), channels.Inbound{ChatID: "telegram:-1", ID: "2"})

	// A warning below the log level is still seen, and not written.
	log.With("channel", "telegram").Warn("telegram api error", "err", "502 Bad Gateway")
	log.Warn("slack socket dropped", "channel", "slack")
	log.Info("channel started", "channel", "telegram")
	if logs.Len() != 0 {
		t.Fatalf("the monitor wrote what the level filters out: %s", logs.String())
	}

	got := map[string]ChannelState{}
	for _, st := range m.States() {
		got[st.Name] = st
	}
	for _, tc := range []struct {
		name, state, err string
		events           int64
	}{
		{"telegram", "running", "telegram api error: 502 Bad Gateway", 2},
		{"whatsapp", "failed", "logged out", 0},
		{"slack", "starting", "slack socket dropped", 0},
	} {
		st := got[tc.name]
		if st.State != tc.state || !strings.Contains(st.LastError, tc.err) || st.Events != tc.events {
			t.Errorf("%s: %+v", tc.name, st)
		}
	}
	if got["telegram"].LastEvent.IsZero() {
		t.Error("no last event for telegram")
	}
	log.Error("boom", "channel", "telegram")
	if !strings.Contains(logs.String(), "boom") {
		t.Fatal("an error at the log level was not written")
	}
	var nilMon *Monitor
	nilMon.Started("x", nil)
	if nilMon.Sink(sink) != sink || nilMon.States() != nil {
		t.Fatal("a nil monitor is not a no-op")
	}
}
