package discordfake

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, u string, auth bool) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bot "+Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSignedLinksExpire: the CDN serves a signed link until it expires,
// then answers 404; a tampered signature is 403; a fresh read of the
// message signs the link anew.
func TestSignedLinksExpire(t *testing.T) {
	s := New(t)
	id, _ := s.Post(Message{Attachments: []Attachment{{Name: "a b.png", ContentType: "image/png", Body: []byte("png")}}})
	link := func() string {
		req, _ := http.NewRequest(http.MethodGet, s.APIURL()+"/channels/"+Channel+"/messages/"+id, nil)
		req.Header.Set("Authorization", "Bot "+Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			Attachments []struct {
				URL string `json:"url"`
			} `json:"attachments"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || len(m.Attachments) != 1 {
			t.Fatalf("message: %+v %v", m, err)
		}
		return m.Attachments[0].URL
	}
	old := link()
	if c := get(t, old, false); c != http.StatusOK {
		t.Fatalf("fresh link: %d", c)
	}
	if c := get(t, strings.Replace(old, "hm=", "hm=0", 1), false); c != http.StatusForbidden {
		t.Fatalf("tampered link: %d", c)
	}
	s.ExpireLinks()
	if c := get(t, old, false); c != http.StatusNotFound {
		t.Fatalf("expired link: %d", c)
	}
	if c := get(t, link(), false); c != http.StatusOK {
		t.Fatalf("re-signed link: %d", c)
	}
	if c := get(t, link(), true); c != http.StatusBadRequest {
		t.Fatalf("a CDN request with the token: %d", c)
	}
	if s.CDNHits(strings.Split(strings.TrimPrefix(old, s.URL+"/cdn/attachments/"+Channel+"/"), "/")[0]) != 2 {
		t.Fatal("hits not counted")
	}
	if c := get(t, s.APIURL()+"/users/@me", false); c != http.StatusUnauthorized {
		t.Fatalf("API without token: %d", c)
	}
}
