package websearch

import (
	"strings"

	"golang.org/x/net/html"

	"github.com/botd-dev/botd/internal/textclip"
)

// plainLine is s, which a provider may give as an HTML fragment (Brave
// wraps the query's words in <strong> and escapes quotes as entities), as
// one line of plain text of at most max runes: tags dropped, the text of
// script and style dropped with them, entities decoded.
func plainLine(s string, max int) string {
	if !strings.ContainsAny(s, "<&") {
		return textclip.OneLine(s, max)
	}
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	skip := 0 // inside script or style, whose text is code, not prose
	for {
		switch z.Next() {
		case html.ErrorToken:
			return textclip.OneLine(b.String(), max)
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style":
				skip++
			case "br", "p", "div", "li":
				b.WriteByte(' ')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style":
				if skip > 0 {
					skip--
				}
			case "p", "div", "li":
				b.WriteByte(' ')
			}
		}
		// Stop reading once far more than fits is gathered: the rest
		// would be clipped anyway.
		if b.Len() > 8*max {
			return textclip.OneLine(b.String(), max)
		}
	}
}
