package format

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"

	"golang.org/x/net/html"
)

var seeds = []string{
	"**bold** _it_ ~~s~~ `code` [l](https://x.example) <b>raw</b> & < >",
	"# h\n\n- a\n  - b\n1. c\n\n> q\n> > qq\n\n```go\nx := 1 < 2\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |",
	"unbalanced **bold and <script>alert(1)</script> [x](javascript:alert(1))",
	"<div onclick=\"x\">\n*hi*\n</div>",
	"😀 **😀** www.example.com a@b.example\n---\n![i](https://x.example/i.png)",
}

func FuzzTelegram(f *testing.F) {
	for _, s := range seeds {
		f.Add(s, 4096)
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, md string, limit int) {
		limit = limit % 5000
		if limit < 0 {
			limit = -limit
		}
		for _, p := range Render(md, Telegram, limit) {
			text, err := TelegramText(p)
			if err != nil {
				if err == ErrTelegramUTF8 {
					continue // the markdown itself was not UTF-8
				}
				t.Fatalf("Telegram would refuse a piece: %v\n%q\nfrom %q", err, p, md)
			}
			// A piece may exceed a limit smaller than the markup and
			// one unbreakable atom (a bullet with its indent), never a
			// real one.
			if n := len(utf16.Encode([]rune(text))); limit >= 256 && strings.Count(md, "\n") < 100 && n > limit {
				t.Fatalf("piece of %d UTF-16 units, limit %d: %q", n, limit, p)
			}
		}
	})
}

func FuzzWeb(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		for _, p := range Render(md, Web, 0) {
			if err := webAllowed(p); err != nil {
				t.Fatalf("%v\nfrom %q", err, md)
			}
		}
	})
}

// webAllow is every tag the web renderer may emit and the attributes each
// may carry.
var webAllow = map[string]map[string]bool{
	"p": {}, "strong": {}, "em": {}, "del": {}, "code": {"class": true}, "pre": {},
	"a": {"href": true, "rel": true, "target": true}, "ul": {}, "ol": {"start": true}, "li": {},
	"blockquote": {}, "h3": {}, "h4": {}, "h5": {}, "h6": {}, "table": {}, "thead": {}, "tbody": {},
	"tr": {}, "th": {}, "td": {}, "hr": {}, "br": {}, "span": {"class": true},
}

// hlClass is the only class a span may carry: a highlighted token's.
var hlClass = regexp.MustCompile(`^hl-[a-z]{1,2}$`)

// webAllowed parses rendered web HTML as a browser would and reports the
// first tag or attribute outside the allow-list, or a link that is not
// http(s) or mailto.
func webAllowed(s string) error {
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil
		case html.CommentToken, html.DoctypeToken:
			return fmt.Errorf("web output has markup %q", z.Token().String())
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			tok := z.Token()
			attrs, ok := webAllow[tok.Data]
			if !ok {
				return fmt.Errorf("web output has tag %q: %q", tok.Data, s)
			}
			for _, a := range tok.Attr {
				if !attrs[a.Key] {
					return fmt.Errorf("web output has attribute %s on %s: %q", a.Key, tok.Data, s)
				}
				l := strings.ToLower(a.Val)
				if a.Key == "href" && !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") && !strings.HasPrefix(l, "mailto:") {
					return fmt.Errorf("web output links to %q", a.Val)
				}
				if a.Key == "class" && tok.Data == "span" && !hlClass.MatchString(a.Val) {
					return fmt.Errorf("web output has span class %q", a.Val)
				}
				if a.Key == "class" && tok.Data == "code" && !strings.HasPrefix(a.Val, "language-") {
					return fmt.Errorf("web output has class %q", a.Val)
				}
			}
		}
	}
}
