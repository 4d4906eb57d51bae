package webpage

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestStripChrome: which elements go before extraction, by the text
// left in the tree.
func TestStripChrome(t *testing.T) {
	tests := []struct {
		name, body string
		gone, kept []string
	}{
		{"site footer goes, article footer stays",
			`<footer>site footer</footer><article><p>story</p><footer>article footer</footer></article>`,
			[]string{"site footer"}, []string{"story", "article footer"}},
		{"a section's and an aside's footers stay",
			`<section><footer>section footer</footer></section><aside><footer>aside footer</footer></aside>`,
			nil, []string{"section footer", "aside footer"}},
		{"nav inside an article goes", `<article><nav>contents</nav><p>story</p></article>`,
			[]string{"contents"}, []string{"story"}},
		{"notice class names", `<div class="x cookie-notice">a</div><div id="gdpr">b</div><div class="CookieConsent">c</div>` +
			`<div class="cc-window">d</div><div id="cookiebot-dialog">e</div><p>story</p>`,
			[]string{">a<", ">b<", ">c<", ">d<", ">e<"}, []string{"story"}},
		{"names that only mention cookies stay", `<div class="cookie-list">a</div><p class="comment-form-cookies-consent">b</p>` +
			`<div class="cookies-recipe">c</div><div class="fortune-cookie">d</div>`,
			nil, []string{">a<", ">b<", ">c<", ">d<"}},
		{"a consent class on body says nothing of its text", ``, nil, []string{"story"}},
		{"roles", `<div role="Navigation">a</div><div role="contentinfo">b</div><div role="main">story</div><div role="note">c</div>`,
			[]string{">a<", ">b<"}, []string{"story", ">c<"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if body == "" {
				body = "<p>story</p>"
			}
			doc, err := html.Parse(strings.NewReader(`<html><body class="cookie-consent">` + body + `</body></html>`))
			if err != nil {
				t.Fatal(err)
			}
			stripChrome(doc)
			var b strings.Builder
			if err := html.Render(&b, doc); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, s := range tt.gone {
				if strings.Contains(out, s) {
					t.Errorf("%q is still there: %s", s, out)
				}
			}
			for _, s := range tt.kept {
				if !strings.Contains(out, s) {
					t.Errorf("%q is gone: %s", s, out)
				}
			}
		})
	}
}
