package format

import (
	"strings"
	"testing"
)

// TestHostile feeds what a model gets wrong or a chat member smuggles in,
// and checks each network shows it as text, never as markup.
func TestHostile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		md      string
		network Network
		want    []string // substrings that must be there
		not     []string // substrings that must not
	}{
		{"unbalanced bold telegram", "this **never closes & 2<3", Telegram,
			[]string{"this **never closes &amp; 2&lt;3"}, []string{"<b>"}},
		{"unbalanced bold slack", "this **never closes & 2<3", Slack,
			[]string{"&amp; 2&lt;3"}, nil},
		{"script telegram", "hi <script>alert(1)</script>", Telegram,
			[]string{"&lt;script&gt;alert(1)&lt;/script&gt;"}, []string{"<script"}},
		{"script web", "hi <script>alert(1)</script>", Web,
			[]string{"&lt;script&gt;"}, []string{"<script"}},
		{"html block web", "<div onclick=\"x()\">\nhello\n</div>", Web,
			[]string{"&lt;div onclick=&quot;x()&quot;&gt;"}, []string{"<div"}},
		{"typed b telegram", "a <b>bold</b> claim", Telegram,
			[]string{"&lt;b&gt;bold&lt;/b&gt;"}, []string{"<b>"}},
		{"typed b web", "a <b>bold</b> claim", Web,
			[]string{"&lt;b&gt;bold&lt;/b&gt;"}, []string{"<b>"}},
		{"ampersand entity telegram", "fish &amp; chips & &lt;", Telegram,
			[]string{"fish &amp; chips &amp; &lt;"}, nil},
		{"javascript link telegram", "[click](javascript:alert(1))", Telegram,
			[]string{"click"}, []string{"href", "javascript"}},
		{"javascript link web", "[click](javascript:alert(1))", Web,
			[]string{"click"}, []string{"href", "javascript"}},
		{"javascript link slack", "[click](javascript:alert(1))", Slack,
			[]string{"click"}, []string{"<javascript", "javascript"}},
		{"data link whatsapp", "[x](data:text/html,hi)", WhatsApp,
			[]string{"x"}, []string{"data:"}},
		{"tg link telegram", "[me](tg://user?id=1)", Telegram,
			[]string{`<a href="tg://user?id=1">me</a>`}, nil},
		{"tg link web", "[me](tg://user?id=1)", Web,
			[]string{"me"}, []string{"href"}},
		{"quote in href", `[q](https://x.example/"><script>)`, Telegram,
			nil, []string{`"><script>`}},
		{"nested lists", "- a\n  - b\n    - c\n- d", Telegram,
			[]string{"• a\n  • b\n    • c\n• d"}, nil},
		{"nested lists web", "- a\n  - b", Web,
			[]string{"<ul><li>a\n<ul><li>b</li></ul></li></ul>"}, nil},
		{"nested quote telegram", "> a\n> > b", Telegram,
			[]string{"<blockquote>a\n\nb</blockquote>"}, nil},
		{"image is a link", "![the cat](https://x.example/cat.png)", Telegram,
			[]string{`<a href="https://x.example/cat.png">the cat</a>`}, []string{"<img"}},
		{"image web", "![cat](https://x.example/c.png)", Web,
			[]string{`<a href="https://x.example/c.png"`}, []string{"<img"}},
		{"plain has no markup", "**b** _i_ `c` [l](https://x.example)", Plain,
			[]string{"b i c l (https://x.example)"}, []string{"*", "`", "["}},
		{"whatsapp link", "[docs](https://x.example/d)", WhatsApp,
			[]string{"docs (https://x.example/d)"}, nil},
		{"slack escapes in link", "[a<b](https://x.example/?a=1&b=2|3)", Slack,
			[]string{"<https://x.example/?a=1&amp;b=2%7C3|a&lt;b>"}, nil},
		{"heading level web", "# one\n###### six", Web,
			[]string{"<h3>one</h3>", "<h6>six</h6>"}, []string{"<h1>", "<h2>"}},
		{"slack code in quote", "> quote\n>\n> ```\n> code\n> more\n> ```", Slack,
			[]string{"> quote\n>\n> ```\n> code\n> more\n> ```"}, nil},
		{"slack bare link", "see https://x.example/a", Slack,
			[]string{"see <https://x.example/a>"}, nil},
		{"unknown network is plain", "**b**", Network("irc"),
			[]string{"b"}, []string{"*"}},
		{"code lang hostile", "```go\" onclick=\"x\nfmt\n```", Web,
			[]string{"<pre><code>fmt</code></pre>"}, []string{"onclick"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(Render(tc.md, tc.network, 0), "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("want %q in:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q must not be in:\n%s", n, got)
				}
			}
			if tc.network == Telegram {
				if err := TelegramValid(got); err != nil {
					t.Errorf("Telegram would refuse %q: %v", got, err)
				}
			}
			if tc.network == Web {
				if err := webAllowed(got); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	for _, n := range []Network{Telegram, Slack, WhatsApp, Web, Plain} {
		if got := Render("  \n\n ", n, 100); len(got) != 0 {
			t.Errorf("%s: blank markdown gave %q, want no pieces", n, got)
		}
	}
}
