package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var linkURL = regexp.MustCompile(`/join#link=([A-Za-z0-9_-]+)`)

// A room link lets a guest into one room, and nothing else, until the
// admin revokes it.
func TestRoomLinks(t *testing.T) {
	h := newHarness(t)
	admin := h.admin()
	_, page := h.get(admin, "/admin")
	csrf := hiddenCSRF.FindStringSubmatch(page)[1]
	if resp, body := h.postForm(admin, "/admin/links", url.Values{"csrf": {csrf}, "room": {"main"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create link: %d %s", resp.StatusCode, body)
	}
	if resp, _ := h.postForm(admin, "/admin/links", url.Values{"csrf": {csrf}, "room": {"nowhere"}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("link to an unknown room: %d", resp.StatusCode)
	}
	_, page = h.get(admin, "/admin")
	m := linkURL.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the dashboard shows no link:\n%s", page)
	}
	links, err := h.w.auth.Links(context.Background())
	if err != nil || len(links) != 1 || links[0].Room != "main" {
		t.Fatalf("links %+v", links)
	}

	join := func(code string) (*http.Client, int) {
		c := h.client()
		_, body := h.get(c, "/join")
		resp, _ := h.postForm(c, "/join", url.Values{"csrf": {hiddenCSRF.FindStringSubmatch(body)[1]}, "link": {code}})
		return c, resp.StatusCode
	}
	if _, st := join("not-a-link"); st != http.StatusUnauthorized {
		t.Fatalf("join with a wrong code: %d", st)
	}
	guest, st := join(m[1])
	if st != http.StatusSeeOther {
		t.Fatalf("join: %d", st)
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/r/main", http.StatusOK},
		{"/r/team", http.StatusForbidden},
		{"/r/team/events", http.StatusForbidden},
		{"/admin", http.StatusForbidden},
	} {
		if resp, _ := h.get(guest, tc.path); resp.StatusCode != tc.want {
			t.Errorf("guest GET %s: %d, want %d", tc.path, resp.StatusCode, tc.want)
		}
	}
	gcsrf := h.roomCSRF(guest, "main")
	if resp, body := h.post(guest, "main", gcsrf, "Gina", "hello from a guest"); resp.StatusCode != http.StatusOK {
		t.Fatalf("guest post: %d %s", resp.StatusCode, body)
	}
	if in := h.sink.Next(t); in.SenderName != "Gina" || !strings.HasPrefix(in.SenderID, "web:link:") {
		t.Fatalf("guest message %+v", in)
	}
	if resp, _ := h.post(guest, "team", gcsrf, "Gina", "sneaking in"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("guest post to another room: %d", resp.StatusCode)
	}
	if resp, _ := h.postForm(guest, "/admin/links", url.Values{"csrf": {gcsrf}, "room": {"main"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("guest creating a link: %d", resp.StatusCode)
	}

	// Revoked: the guest's very next request is refused.
	if resp, body := h.postForm(admin, "/admin/links/"+links[0].ID+"/revoke", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	if resp, _ := h.get(guest, "/r/main"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("guest after revoke: %d, want a redirect to the login", resp.StatusCode)
	}
	if resp, _ := h.post(guest, "main", gcsrf, "Gina", "still here?"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("guest post after revoke: %d", resp.StatusCode)
	}
	if _, st := join(m[1]); st != http.StatusUnauthorized {
		t.Fatalf("join with a revoked link: %d", st)
	}
	if n := h.sink.Total(); n != 1 {
		t.Fatalf("%d messages delivered, want the one before the revoke", n)
	}
}
