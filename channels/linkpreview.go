package channels

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/botd-dev/botd/internal/textclip"
	"github.com/botd-dev/botd/mediaregistry"
)

// LinkPreview is what the network already sent about a link in a message
// (a Slack unfurl, a WhatsApp preview): shown to the model next to the
// message so it knows what was linked without fetching anything. Every
// field is written by strangers (the sender's app or the linked site).
type LinkPreview struct {
	URL         string
	Title       string
	Description string
	Site        string
}

// Bounds of a rendered preview. A preview only names what was linked; the
// page itself is fetch_url's business, so a short line is enough.
const (
	MaxLinksPerMessage = 5
	maxLinkTitleRunes  = 200
	maxLinkDescRunes   = 300
	maxLinkSiteRunes   = 60
	maxLinkURLBytes    = 300
	linkPreviewOpening = "[Link: "
)

// renderLinks is one line per preview worth showing, in order, duplicates
// dropped, at most MaxLinksPerMessage and then a line counting the rest.
func renderLinks(links []LinkPreview) []string {
	var lines []string
	seen := map[string]bool{}
	more := 0
	for _, l := range links {
		s := renderLink(l)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		if len(lines) == MaxLinksPerMessage {
			more++
			continue
		}
		lines = append(lines, s)
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("[%d more link %s omitted]", more, pluralWord(more, "preview", "previews")))
	}
	return lines
}

// renderLink writes one preview as
//
//	[Link: https://example.com/a — "Title" · Site: description]
//
// leaving out what is unknown; "" for a preview with neither title nor
// description, which tells the model nothing the link itself does not.
// Nothing in a field can end the line, close the bracket, open another
// one (so no placeholder or ref can be posed) or end the quotes.
func renderLink(l LinkPreview) string {
	title := linkText(l.Title, maxLinkTitleRunes, nil)
	desc := linkText(l.Description, maxLinkDescRunes, nil)
	if title == "" && desc == "" {
		return ""
	}
	// The site name stands before a colon: one of its own would blur where
	// the description starts.
	site := linkText(l.Site, maxLinkSiteRunes, strings.NewReplacer(":", " "))
	site = strings.Join(strings.Fields(site), " ")

	var b strings.Builder
	b.WriteString(linkPreviewOpening)
	if u := cleanLinkURL(l.URL); u != "" {
		b.WriteString(u)
		b.WriteString(" — ")
	}
	sep := ""
	if title != "" {
		b.WriteString(`"`)
		b.WriteString(title)
		b.WriteString(`"`)
		sep = " · "
	}
	switch {
	case site != "" && desc != "":
		b.WriteString(sep + site + ": " + desc)
	case site != "":
		b.WriteString(sep + site)
	case desc != "":
		b.WriteString(sep + desc)
	}
	b.WriteByte(']')
	return b.String()
}

// fenceOff keeps a stranger's text inside the preview's brackets and out
// of the title's quotes (a quote in the description could make the title
// look longer than it is).
var fenceOff = strings.NewReplacer("[", "(", "]", ")", `"`, "'")

// linkText cleans one field the way captions are cleaned (one line, no
// invisible characters, fake placeholders defused), then takes its square
// brackets, double quotes and what extra maps away, and clips it to max
// runes.
func linkText(s string, max int, extra *strings.Replacer) string {
	s = fenceOff.Replace(mediaregistry.SafeCaption(s))
	if extra != nil {
		s = extra.Replace(s)
	}
	return strings.TrimSpace(textclip.Clip(s, max))
}

// cleanLinkURL is raw as an http(s) URL that stays one token inside the
// preview, "" for anything else (javascript:, a bare host, garbage).
// Credentials are dropped: the preview line is no place to repeat them.
// Past the host, every byte that could end the token, close the bracket
// or the quotes, or read as something else is percent-encoded (the URL
// means the same); the host is as url.URL writes it (an IPv6 literal keeps
// its brackets).
func cleanLinkURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return ""
	}
	u.User = nil
	s := u.String()
	prefix := u.Scheme + "://"
	if !strings.HasPrefix(s, prefix) {
		return ""
	}
	rest := s[len(prefix):]
	hostEnd := strings.IndexAny(rest, "/?#")
	if strings.HasPrefix(rest, "[") {
		// An IPv6 literal: its own brackets are not a path.
		if i := strings.IndexByte(rest, ']'); i >= 0 {
			if j := strings.IndexAny(rest[i:], "/?#"); j >= 0 {
				hostEnd = i + j
			} else {
				hostEnd = -1
			}
		}
	}
	host, tail := rest, ""
	if hostEnd >= 0 {
		host, tail = rest[:hostEnd], rest[hostEnd:]
	}
	if !plainHost(host) {
		return ""
	}
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString(host)
	for i := 0; i < len(tail); i++ {
		c := tail[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("[]\"<>\\^`{|}", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	out := b.String()
	if len(out) > maxLinkURLBytes {
		out = out[:maxLinkURLBytes] + "…" // ASCII now: bytes are runes
	}
	return out
}

// plainHost reports a host made of what host names, IPv4 and IPv6
// literals, zones and ports are made of. url.Parse lets '"', '<', '>' and
// ']' through in a host; a URL with one of those is no link worth showing.
func plainHost(h string) bool {
	if strings.HasPrefix(h, "[") {
		i := strings.IndexByte(h, ']')
		if i < 0 {
			return false
		}
		inner, port := h[1:i], h[i+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return false
		}
		return plainHost(inner) && plainHost(port)
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(".-_~%:", c) >= 0) {
			return false
		}
	}
	return true
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
