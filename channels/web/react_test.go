package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
)

// A reaction reaches every open page of the room as a "reaction" event
// naming the message; taking it off is the same event with no emoji. A
// room page marks each message with its id, so the page can find it.
func TestReactionShownInTheRoom(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	ctx := context.Background()
	d, err := h.w.Send(ctx, channels.OutMessage{Chat: "web:main", Text: "a question"})
	if err != nil {
		t.Fatal(err)
	}
	ev := h.events(c, "main", 0)
	m := ev.message()
	for _, tc := range []struct{ old, emoji, want string }{
		{"", "👀", `{"id":"` + m.ID + `","emoji":"👀"}`},
		{"👀", "", `{"id":"` + m.ID + `","emoji":""}`},
	} {
		if err := h.w.React(ctx, channels.Reaction{Chat: "web:main", MessageID: m.ID, Old: tc.old, Emoji: tc.emoji}); err != nil {
			t.Fatal(err)
		}
		if name, data := ev.next(); name != "reaction" || data != tc.want {
			t.Fatalf("event %s %s, want reaction %s", name, data, tc.want)
		}
	}
	if err := h.w.React(ctx, channels.Reaction{Chat: "web:nowhere", MessageID: "x", Emoji: "👀"}); err == nil {
		t.Error("a reaction in a room that does not exist was accepted")
	}
	if _, page := h.get(c, "/r/main"); !strings.Contains(page, `data-id="`+d.MessageIDs[0]+`"`) {
		t.Errorf("the room page does not mark the message with its id")
	}
}

// The dashboard lists the chats waiting for approval, with their code,
// and says how to approve them; the chat's name is escaped.
func TestDashboardPendingChats(t *testing.T) {
	var h *harness
	h = newHarness(t, func(_ *Config, o *Options) {
		o.Pending = func(context.Context) ([]PendingChat, error) {
			return []PendingChat{{Code: "ABCD-EF23", Chat: "telegram:-200", Name: "<b>Book</b> Club", Kind: "group", By: "Ann", Asked: h.w.now().Add(-3*time.Minute - 30*time.Second)}}, nil
		}
	})
	resp, page := h.get(h.admin(), "/admin")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard: %d", resp.StatusCode)
	}
	for _, want := range []string{"Chats waiting for approval", "<code>ABCD-EF23</code>", "telegram:-200", "&lt;b&gt;Book&lt;/b&gt; Club", "3m ago", "botd chats approve CODE"} {
		if !strings.Contains(page, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	// Without Decide, no buttons.
	if strings.Contains(page, "/admin/chats/approve") {
		t.Error("approve buttons without a way to approve")
	}
	// Without pairing wired, no section.
	h2 := newHarness(t)
	if _, page := h2.get(h2.admin(), "/admin"); strings.Contains(page, "Chats waiting for approval") {
		t.Error("the section shows without Pending")
	}
}

// The dashboard's Approve and Deny buttons carry the code to Decide, with
// the admin's CSRF token; a refusal is said, nothing else is done.
func TestDashboardDecidesPendingChats(t *testing.T) {
	type call struct {
		code    string
		approve bool
	}
	var calls []call
	h := newHarness(t, func(_ *Config, o *Options) {
		o.Pending = func(context.Context) ([]PendingChat, error) {
			return []PendingChat{{Code: "ABCD-EF23", Chat: "telegram:-200", Kind: "group"}}, nil
		}
		o.Decide = func(_ context.Context, code string, approve bool) (string, error) {
			calls = append(calls, call{code, approve})
			if code != "ABCD-EF23" {
				return "", errors.New("no chat waits with that code")
			}
			return "done", nil
		}
	})
	admin := h.admin()
	_, page := h.get(admin, "/admin")
	if !strings.Contains(page, `formaction="/admin/chats/approve"`) || !strings.Contains(page, `formaction="/admin/chats/deny"`) {
		t.Fatal("the pending chat has no Approve and Deny buttons")
	}
	csrf := hiddenCSRF.FindStringSubmatch(page)[1]
	for _, tc := range []struct {
		path, csrf, code string
		status           int
		want             []call
	}{
		{"/admin/chats/approve", csrf, "ABCD-EF23", http.StatusSeeOther, []call{{"ABCD-EF23", true}}},
		{"/admin/chats/deny", csrf, "ABCD-EF23", http.StatusSeeOther, []call{{"ABCD-EF23", false}}},
		{"/admin/chats/approve", csrf, "ZZZZ-ZZZZ", http.StatusBadRequest, []call{{"ZZZZ-ZZZZ", true}}},
		{"/admin/chats/approve", "forged", "ABCD-EF23", http.StatusForbidden, nil},
		{"/admin/chats/delete", csrf, "ABCD-EF23", http.StatusNotFound, nil},
	} {
		calls = nil
		resp, body := h.postForm(admin, tc.path, url.Values{"csrf": {tc.csrf}, "code": {tc.code}})
		if resp.StatusCode != tc.status || !slices.Equal(calls, tc.want) {
			t.Errorf("%s %s (csrf %s): %d %q, calls %v; want %d, %v", tc.path, tc.code, tc.csrf, resp.StatusCode, body, calls, tc.status, tc.want)
		}
		if tc.status == http.StatusBadRequest && !strings.Contains(body, "no chat waits with that code") {
			t.Errorf("the refusal is not said: %q", body)
		}
	}
	// A guest (a room link) cannot decide.
	guest, _ := h.guest(admin, "main")
	calls = nil
	if resp, _ := h.postForm(guest, "/admin/chats/approve", url.Values{"csrf": {csrf}, "code": {"ABCD-EF23"}}); resp.StatusCode != http.StatusForbidden || len(calls) != 0 {
		t.Errorf("a guest's approve: %d, calls %v", resp.StatusCode, calls)
	}
}
