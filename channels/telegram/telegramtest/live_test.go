package telegramtest

import (
	"strings"
	"testing"
)

func TestCheckTelegramHTML(t *testing.T) {
	cases := []struct {
		html string
		bad  string // part of the error; "" for valid
	}{
		{"plain", ""},
		{"<b>bold</b> &amp; <i>it</i> &lt;x&gt; &#39; &#x27;", ""},
		{`<a href="https://e.org/?a=1&amp;b=2">link</a>`, ""},
		{`<pre><code class="language-go">x := 1</code></pre>`, ""},
		{"<blockquote expandable>q</blockquote>", ""},
		{"a < b", "unclosed start tag"}, {"a < b > c", "unsupported start tag"},
		{"a & b", "unclosed entity"},
		{"&nbsp;", "unsupported HTML entity"},
		{"<b>open", "can't find end tag"},
		{"<b><i>x</b></i>", "unexpected end tag"},
		{"<div>x</div>", "unsupported start tag"},
		{"x > y", "unescaped '>'"},
	}
	for _, c := range cases {
		err := checkTelegramHTML(c.html)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%q: %v, want valid", c.html, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%q: %v, want an error about %q", c.html, err, c.bad)
		}
	}
}

func TestVisibleHTML(t *testing.T) {
	if got := visibleHTML("<b>a</b> &lt;&amp;&gt; <a href=\"u\">l</a>"); got != "a <&> l" {
		t.Errorf("visible %q", got)
	}
}
