package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/botd-dev/botd/store"
)

// guestIn joins room main through a new room link, as a browser would.
func guestIn(t *testing.T, h *harness) *http.Client {
	t.Helper()
	l, err := h.w.auth.createLink(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	c := h.client()
	_, body := h.get(c, "/join")
	resp, _ := h.postForm(c, "/join", url.Values{"csrf": {hiddenCSRF.FindStringSubmatch(body)[1]}, "link": {l.Token}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("join: %d", resp.StatusCode)
	}
	return c
}

// setName asks for name as the page does and returns the status and body.
func setName(t *testing.T, h *harness, c *http.Client, name string) (int, string) {
	t.Helper()
	csrf := h.roomCSRF(c, "main")
	resp, body := h.postForm(c, "/r/main/name?"+url.Values{csrfField: {csrf}}.Encode(), url.Values{"name": {name}})
	return resp.StatusCode, body
}

// A guest names themselves once per visit; the name is then theirs in the
// room: reserved words, the host's names and another guest's are refused,
// and what a later post's form says is ignored. The host's empty name is
// "Admin", and the host cannot take a guest's.
func TestGuestNames(t *testing.T) {
	h := newHarness(t)
	admin := h.admin()
	acsrf := h.roomCSRF(admin, "main")
	if resp, body := h.post(admin, "main", acsrf, "Mum", "hello all"); resp.StatusCode != http.StatusOK {
		t.Fatalf("admin post: %d %s", resp.StatusCode, body)
	}
	// The agent stores what the room delivers (its sink); here the test
	// does, so the host's name is on record as botd would have it.
	in := h.sink.Next(t)
	if err := h.st.UpsertChat(context.Background(), store.Chat{ID: in.ChatID, Name: "Main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.PutMessage(context.Background(), store.Message{ChatID: in.ChatID, ID: in.ID, SenderID: in.SenderID,
		SenderName: in.SenderName, Text: in.Text, Time: in.Time}); err != nil {
		t.Fatal(err)
	}

	gina := guestIn(t, h)
	if _, page := h.get(gina, "/r/main"); !strings.Contains(page, `data-ask="true"`) {
		t.Fatal("a new guest is not asked for a name")
	}
	for _, tc := range []struct {
		name   string
		status int
		says   string
	}{
		{"", http.StatusBadRequest, "type the name"},
		{"  \u200b ", http.StatusBadRequest, "type the name"},
		{"admin", http.StatusConflict, "reserved"},
		{"Owner", http.StatusConflict, "reserved"},
		{"andy", http.StatusConflict, "reserved"}, // the assistant
		{"MUM", http.StatusConflict, "host"},      // the admin posted as Mum here
		{"Gina", http.StatusSeeOther, ""},
		{"Gina2", http.StatusConflict, `you are &#34;Gina&#34; for this visit`},
	} {
		status, body := setName(t, h, gina, tc.name)
		if status != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("name %q: %d %q, want %d with %q", tc.name, status, body, tc.status, tc.says)
		}
	}
	if _, page := h.get(gina, "/r/main"); !strings.Contains(page, `You are <b>Gina</b>`) || strings.Contains(page, `data-ask`) {
		t.Error("the named guest's page still asks")
	}
	// A later post is from Gina, whatever its form says.
	if resp, body := h.post(gina, "main", h.roomCSRF(gina, "main"), "Mum", "hi"); resp.StatusCode != http.StatusOK {
		t.Fatalf("guest post: %d %s", resp.StatusCode, body)
	}
	if in := h.sink.Next(t); in.SenderName != "Gina" {
		t.Errorf("the guest's post came from %q", in.SenderName)
	}

	// Another visit cannot take it, in any case; its first post names it.
	ben := guestIn(t, h)
	if status, body := setName(t, h, ben, "gINA"); status != http.StatusConflict || !strings.Contains(body, "taken") {
		t.Errorf("a second guest took Gina: %d %s", status, body)
	}
	if resp, _ := h.post(ben, "main", h.roomCSRF(ben, "main"), "", "who am I"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a nameless guest posted: %d", resp.StatusCode)
	}
	if resp, body := h.post(ben, "main", h.roomCSRF(ben, "main"), "Ben", "hi"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first post naming Ben: %d %s", resp.StatusCode, body)
	}
	if in := h.sink.Next(t); in.SenderName != "Ben" {
		t.Errorf("Ben's post came from %q", in.SenderName)
	}

	// The host: empty is Admin, a guest's name is refused.
	if resp, body := h.post(admin, "main", acsrf, "", "x"); resp.StatusCode != http.StatusOK {
		t.Fatalf("admin post: %d %s", resp.StatusCode, body)
	}
	if in := h.sink.Next(t); in.SenderName != "Admin" {
		t.Errorf("the admin's empty name became %q", in.SenderName)
	}
	if resp, body := h.post(admin, "main", acsrf, "gina", "x"); resp.StatusCode != http.StatusConflict || !strings.Contains(body, "guest") {
		t.Errorf("the admin took a guest's name: %d %s", resp.StatusCode, body)
	}
	if status, _ := setName(t, h, admin, "Host"); status != http.StatusBadRequest {
		t.Errorf("the admin used the guest name form: %d", status)
	}
}
