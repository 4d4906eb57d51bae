package mediaregistry_test

import (
	"reflect"
	"testing"

	"github.com/botd-dev/botd/mediaregistry"
)

func TestCanonicalURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://example.com", "https://example.com/"},
		{"HTTPS://Example.COM:443/a#top", "https://example.com/a"},
		{"http://example.com:80/a?b=1", "http://example.com/a?b=1"},
		{"http://example.com:8080/", "http://example.com:8080/"},
		{"https://bücher.example/x", "https://xn--bcher-kva.example/x"},
		{"http://[::1]:80/", "http://[::1]/"},
		{"  https://example.com/a b  ", "https://example.com/a%20b"},
		{"example.com/a", "https://example.com/a"},
	} {
		u, err := mediaregistry.CanonicalURL(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := u.String(); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"ftp://example.com/", "file:///etc/passwd", "javascript:alert(1)", "/etc/passwd", "localhost/x", "https://", "http://%zz/"} {
		if u, err := mediaregistry.CanonicalURL(bad); err == nil {
			t.Errorf("%q accepted as %q", bad, u)
		}
	}
}

func TestURLsInText(t *testing.T) {
	got := mediaregistry.URLs("see https://Example.com/a. and (http://b.example/x), again https://example.com/a#frag! javascript:x", 5)
	want := []string{"https://example.com/a", "http://b.example/x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("URLs = %q, want %q", got, want)
	}
	if got := mediaregistry.URLs("https://a.example/ https://b.example/ https://c.example/", 2); len(got) != 2 {
		t.Fatalf("max not kept: %q", got)
	}
}

func TestLinkIDScopedByChat(t *testing.T) {
	a := mediaregistry.LinkID("telegram:1", "https://example.com/")
	if a != mediaregistry.LinkID("telegram:1", "https://example.com/") {
		t.Fatal("not stable")
	}
	if a == mediaregistry.LinkID("telegram:2", "https://example.com/") || a == mediaregistry.LinkID("telegram:1", "https://example.com/x") {
		t.Fatal("not distinct")
	}
	if !mediaregistry.ValidRefID(a) {
		t.Fatalf("%q is not a valid ref id", a)
	}
}
