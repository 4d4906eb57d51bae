package ipc

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/progress"
)

// Timing of progress files: a change of state a handler reports is written
// at once, new figures in the same state at most once per progressEvery,
// the claim within progressEvery (most requests are answered sooner and
// never get a file), and every live request's file is rewritten at least
// once per progressHeartbeat so the client can tell a working host from a
// dead one (progressFresh).
const (
	progressEvery     = time.Second
	progressHeartbeat = 5 * time.Second
	progressFresh     = 30 * time.Second
)

// progressFile is progress/<id>.json.
type progressFile struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	State   string    `json:"state"`
	Done    int64     `json:"done,omitempty"`
	Total   int64     `json:"total,omitempty"`
	Since   time.Time `json:"since"`   // when the host first saw the request
	Claimed bool      `json:"claimed"` // moved to processing/, handler runs
	Updated time.Time `json:"updated"` // when this file was written
}

// tracker holds the progress of one request the host has seen, from its
// first wait for a slot until its response is written.
type tracker struct {
	h     *Host
	g     *group
	id    string
	typ   string
	since time.Time

	mu      sync.Mutex
	p       progress.Progress
	claimed bool
	written time.Time // zero: no file yet
	dirty   bool
	done    bool
}

// set records p; a new state is written at once, new figures at most once
// per progressEvery (the host's ticker writes what was held back).
func (t *tracker) set(p progress.Progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	if p.State == "" {
		p.State = t.p.State
	}
	changed := p.State != t.p.State
	t.p, t.dirty = p, true
	if changed || time.Since(t.written) >= progressEvery {
		t.writeLocked()
	}
}

// tick writes held-back figures, and refreshes the file of a live request
// so its freshness shows the host is alive.
func (t *tracker) tick(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	if (t.dirty && now.Sub(t.written) >= progressEvery) || (!t.written.IsZero() && now.Sub(t.written) >= progressHeartbeat) {
		t.writeLocked()
	}
}

// claim records that the host claimed the request and its handler runs.
// Most requests are answered within milliseconds, so the file is left to
// the next tick (within progressEvery) unless the handler reports first:
// a caller sees the claim anyway (its request is gone from requests/).
func (t *tracker) claim() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p, t.claimed, t.dirty = progress.Progress{State: progress.Working}, true, true
	if !t.written.IsZero() {
		t.writeLocked() // it was queued: say at once that it runs
	}
}

func (t *tracker) writeLocked() {
	now := time.Now()
	b, _ := json.Marshal(progressFile{Version: Version, ID: t.id, Type: t.typ, State: t.p.State, Done: t.p.Done,
		Total: t.p.Total, Since: t.since.UTC(), Claimed: t.claimed, Updated: now.UTC()})
	if err := writeAtomicRoot(t.g.root, dirProgress, t.id+".json", b, false); err != nil {
		t.h.opts.Log.Debug("ipc: cannot write progress", "group", t.g.name, "id", t.id, "err", err)
	}
	t.written, t.dirty = now, false
}

// finish stops the tracker and removes its file.
func (t *tracker) finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if !t.written.IsZero() {
		t.g.root.Remove(dirProgress + "/" + t.id + ".json")
	}
}

// busyMessage explains a request the host saw but never started.
func busyMessage(repeatable bool) string {
	what := "carried out"
	if !repeatable {
		what = "sent"
	}
	return fmt.Sprintf("botd is running but busy with other requests of this group, so this one never started; "+
		"it was withdrawn and NOT %s — try again shortly", what)
}

// inProgressMessage explains a request the host claimed and has not
// answered yet, from its last progress (nil: none written).
func inProgressMessage(repeatable bool, p *progressFile, now time.Time) string {
	send := !repeatable
	sendTail := "it has not confirmed delivery yet — check the chat before sending it again"
	if p == nil {
		if send {
			return "botd is sending this; " + sendTail
		}
		return "botd is still working on this; ask again shortly — the work continues"
	}
	if quiet := now.Sub(p.Updated); quiet > progressFresh {
		msg := fmt.Sprintf("botd took this request but has not reported on it for %s; it may have stopped (is `botd run` running?)", humanDuration(quiet))
		if send {
			return msg + ". It may or may not have reached the chat — check the chat before sending it again"
		}
		return msg + ". Ask again once botd runs"
	}
	figures := progressFigures(p.Done, p.Total)
	paren := ""
	if figures != "" {
		paren = " (" + figures + ")"
	}
	switch {
	case p.State == progress.Sending || send:
		return "botd is still sending this" + paren + "; " + sendTail
	case p.State == progress.Downloading:
		return "botd is still downloading this" + paren + "; ask again shortly — the download continues"
	case p.State == progress.Queued:
		return fmt.Sprintf("botd has this queued behind other work of this group (waiting %s); ask again shortly — it stays queued",
			humanDuration(now.Sub(p.Since)))
	case p.State == progress.Working || p.State == "":
		return fmt.Sprintf("botd is still working on this (for %s); ask again shortly — the work continues", humanDuration(now.Sub(p.Since)))
	}
	if figures != "" {
		figures = ", " + figures
	}
	return fmt.Sprintf("botd is still working on this (%s%s); ask again shortly — the work continues", p.State, figures)
}

// progressFigures renders byte counts for people: "12.0 of 50.0 MB",
// "847 KB so far"; "" when nothing is known.
func progressFigures(done, total int64) string {
	switch {
	case total > 0:
		unit, div, dec := sizeUnit(total)
		return fmt.Sprintf("%s of %s %s", scaled(done, div, dec), scaled(total, div, dec), unit)
	case done > 0:
		unit, div, dec := sizeUnit(done)
		return fmt.Sprintf("%s %s so far", scaled(done, div, dec), unit)
	}
	return ""
}

// sizeUnit picks the unit of n bytes, 1024-based like the placeholders:
// bytes and KB whole, MB and GB with one decimal.
func sizeUnit(n int64) (unit string, div float64, decimals int) {
	switch {
	case n >= 1<<30:
		return "GB", 1 << 30, 1
	case n >= 1<<20:
		return "MB", 1 << 20, 1
	case n >= 1<<10:
		return "KB", 1 << 10, 0
	}
	return "bytes", 1, 0
}

func scaled(n int64, div float64, decimals int) string {
	return fmt.Sprintf("%.*f", decimals, float64(n)/div)
}

// humanDuration: "45s", "3m05s", "2h10m".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
