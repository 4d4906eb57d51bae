package web

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/channels"
)

// draftEvent reads events until a draft whose HTML holds want.
func (s *stream) draftUntil(want string) draft {
	s.t.Helper()
	for {
		name, data := s.next()
		if name != "draft" {
			continue
		}
		var d draft
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			s.t.Fatal(err)
		}
		if strings.Contains(string(d.HTML), want) {
			return d
		}
	}
}

// An answer reaches the room while it is written, as drafts of one id,
// and the final message takes the draft's id, so the page swaps one for
// the other.
func TestStreamDraftsThenMessage(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	ev := h.events(c, "main", 0)
	ctx := context.Background()
	live, err := h.w.BeginStream(ctx, channels.OutMessage{Chat: "web:main", Text: "The rota"})
	if err != nil {
		t.Fatal(err)
	}
	first := ev.draftUntil("The rota")
	for _, tok := range []string{" works", " in", " turns <b>now</b>"} {
		live.Update(first.From + tok) // any growing text
	}
	last := ev.draftUntil("turns &lt;b&gt;now&lt;/b&gt;")
	if last.ID != first.ID || last.From != "Andy" || strings.Contains(string(last.HTML), "<b>") {
		t.Fatalf("drafts %+v then %+v", first, last)
	}
	// A page that connects now gets the draft being written.
	late := h.events(c, "main", 0)
	if d := late.draftUntil("turns"); d.ID != first.ID {
		t.Fatalf("late page got draft %+v", d)
	}
	d, err := live.Finish(ctx, "The rota works **in turns**.")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.MessageIDs) != 1 || d.MessageIDs[0] != first.ID || live.IDs()[0] != first.ID {
		t.Fatalf("delivery %v, draft %s", d.MessageIDs, first.ID)
	}
	m := ev.message()
	if m.ID != first.ID || !m.Assistant || m.Text != "The rota works **in turns**." || string(m.HTML) != "<p>The rota works <strong>in turns</strong>.</p>" {
		t.Fatalf("final message %+v", m)
	}
	if _, err := live.Finish(ctx, "again"); err == nil {
		t.Fatal("a second Finish was accepted")
	}
	// Reconnecting after the end: no draft is left to show.
	again := h.events(c, "main", m.Seq)
	if name, data := again.nextAny(); name != "drafts" || data != "[]" {
		t.Fatalf("reconnect began with %s %s, want an empty drafts list", name, data)
	}
	// The room page renders the answer, and keeps it in its log.
	_, page := h.get(c, "/r/main")
	if !strings.Contains(page, `<div class="text rendered"><p>The rota works <strong>in turns</strong>.</p></div>`) {
		t.Fatalf("room page does not show the rendered answer:\n%s", page)
	}
}

// nextAny is next without skipping the empty drafts list.
func (s *stream) nextAny() (string, string) {
	s.t.Helper()
	name, data := "", ""
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			s.t.Fatalf("event stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && data != "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
}

// Raw HTML from the model is never markup in the room: it shows as the
// characters the model wrote, while its markdown is rendered.
func TestAssistantHTMLIsText(t *testing.T) {
	for _, tc := range []struct{ in, shown string }{
		{`<script>alert(1)</script>`, `<script>alert(1)</script>`},
		{`<img src=x onerror=alert(1)>`, `<img src=x onerror=alert(1)>`},
		{"a & b < c\n**x", "a & b < c\n**x"},
		{"<b>not bold</b> but **bold**", "<b>not bold</b> but bold"},
	} {
		out := string(renderHTML(tc.in))
		for _, tag := range []string{"<script", "<img", "<b>"} {
			if strings.Contains(out, tag) {
				t.Errorf("render(%q) = %q: %s passed as markup", tc.in, out, tag)
			}
		}
		if got := html.UnescapeString(stripTags(out)); got != tc.shown {
			t.Errorf("render(%q) shows %q, want %q", tc.in, got, tc.shown)
		}
	}
}

// stripTags drops the tags of sanitised HTML (no '<' or '>' in text).
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Cancel keeps what was shown, marked; an empty draft just goes.
func TestStreamCancel(t *testing.T) {
	for _, tc := range []struct {
		name, shown, note string
		wantMsg           bool
	}{
		{"shown", "half an answer", "stopped by Ann", true},
		{"nothing shown", "", "stopped", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			c := h.admin()
			ev := h.events(c, "main", 0)
			ctx := context.Background()
			live, err := h.w.BeginStream(ctx, channels.OutMessage{Chat: "web:main", Text: tc.shown})
			if err != nil {
				t.Fatal(err)
			}
			if tc.shown != "" {
				ev.draftUntil(tc.shown)
			}
			if err := live.Cancel(ctx, tc.note); err != nil {
				t.Fatal(err)
			}
			if !tc.wantMsg {
				// Nothing was shown, so nothing is said; the next message
				// is the next thing a page hears.
				h.w.Send(ctx, channels.OutMessage{Chat: "web:main", Text: "next"})
				if m := ev.message(); m.Text != "next" {
					t.Fatalf("after an empty cancel: %+v", m)
				}
				return
			}
			m := ev.message()
			if m.ID != live.IDs()[0] || m.Text != tc.shown || m.Note != tc.note {
				t.Fatalf("cancelled answer %+v", m)
			}
		})
	}
}

// After a restart the draft is gone from memory: what it showed is put in
// the room once, marked as interrupted.
func TestInterruptStream(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for range 2 {
		if err := h.w.InterruptStream(ctx, "web:main", []string{"abc"}, "half"); err != nil {
			t.Fatal(err)
		}
	}
	msgs := h.w.rooms["main"].recent(10)
	if len(msgs) != 1 || msgs[0].ID != "abc" || msgs[0].Text != "half" || !strings.Contains(msgs[0].Note, "interrupted") {
		t.Fatalf("room after two interrupts: %+v", msgs)
	}
	if err := h.w.InterruptStream(ctx, "web:nope", nil, "x"); err == nil {
		t.Fatal("an unknown room was accepted")
	}
}

// The Stop button calls the stopper with the room's chat, behind the
// session's CSRF token.
func TestStopButton(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	csrf := h.roomCSRF(c, "main")
	stop := func(token string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, h.base+"/r/main/stop", nil)
		req.Header.Set("Accept", "application/json")
		req.Header.Set(csrfHeader, token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, out := stop(csrf); code != http.StatusNotImplemented || out["error"] == "" {
		t.Fatalf("without a stopper: %d %v", code, out)
	}
	var mu sync.Mutex
	var asked []string
	running := true
	h.w.SetStopper(func(chat string) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, chat)
		was := running
		running = false
		return was
	})
	for _, tc := range []struct {
		name, token string
		code        int
		stopped     any
	}{
		{"no token", "", http.StatusForbidden, nil},
		{"running", csrf, http.StatusOK, true},
		{"nothing running", csrf, http.StatusOK, false},
	} {
		code, out := stop(tc.token)
		if code != tc.code || out["stopped"] != tc.stopped {
			t.Fatalf("%s: %d %v", tc.name, code, out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(asked, ",") != "web:main,web:main" {
		t.Fatalf("stopper asked for %v", asked)
	}
}
