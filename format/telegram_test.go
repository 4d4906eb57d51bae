package format

import (
	"strings"
	"testing"
)

func TestTelegramValid(t *testing.T) {
	for _, tc := range []struct {
		html string
		err  string // "" when Telegram accepts it
		text string // what Telegram shows, when accepted
	}{
		{"plain & text > here", "", "plain & text > here"},
		{"<b>bold</b> <i>it</i> <s>x</s> <u>u</u>", "", "bold it x u"},
		{"<B>x</b>", "", "x"},
		{`<a href="https://x.example/?a=1&amp;b=2">l</a>`, "", "l"},
		{`<pre><code class="language-go">x</code></pre>`, "", "x"},
		{"<blockquote expandable>q</blockquote>", "", "q"},
		{"&lt;&gt;&amp;&quot;&#65;&#x42;&amp", "", `<>&"AB&`},
		{"&nbsp; stays", "", "&nbsp; stays"},
		{"<b>x</>", "", "x"},
		{`<span class="tg-spoiler">s</span>`, "", "s"},
		{"<b a=1 c='2'>x</b>", "", "x"},
		{"hello <div>x</div>", `Bad Request: can't parse entities: Unsupported start tag "div" at byte offset 6`, ""},
		{"<b>x", `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`, ""},
		{"x</b>", "Bad Request: can't parse entities: Unexpected end tag at byte offset 1", ""},
		{"<b><i>x</b></i>", `Bad Request: can't parse entities: Unmatched end tag at byte offset 7, expected "</i>", found "</b>"`, ""},
		{"2 <3", `Bad Request: can't parse entities: Unclosed start tag at byte offset 2`, ""},
		{"<b", `Bad Request: can't parse entities: Unclosed start tag at byte offset 0`, ""},
		{"<span>x</span>", `Bad Request: can't parse entities: Tag "span" must have class "tg-spoiler" at byte offset 0`, ""},
		{"<b x>y</b>", `Bad Request: can't parse entities: Expected equal sign in declaration of an attribute of the tag "b" at byte offset 0`, ""},
		{"<a href=x\"y>l</a>", "Bad Request: can't parse entities: Unexpected end of name token at byte offset 8", ""},
		{"</b", "Bad Request: can't parse entities: Unexpected end tag at byte offset 0", ""},
		{"<b>x</b", "Bad Request: can't parse entities: Unclosed end tag at byte offset 4", ""},
		{"bad \xff utf8", "Bad Request: text must be encoded in UTF-8", ""},
	} {
		t.Run(tc.html, func(t *testing.T) {
			text, err := TelegramText(tc.html)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if text != tc.text {
					t.Errorf("text %q, want %q", text, tc.text)
				}
				return
			}
			if err == nil || err.Error() != tc.err {
				t.Errorf("error %v, want %q", err, tc.err)
			}
			if err2 := TelegramValid(tc.html); err2 == nil || !strings.HasPrefix(err2.Error(), "Bad Request") {
				t.Errorf("TelegramValid %v, want the same refusal", err2)
			}
		})
	}
}
