package format

import (
	"strings"
)

// network is how one network writes and counts text.
type network struct {
	name Network
	html bool // block structure as tags (the web room), not as lines
	// highlight colours code blocks whose language is named (the web
	// room's finished answers).
	highlight bool

	boldOpen, boldClose     string
	italicOpen, italicClose string
	strikeOpen, strikeClose string
	codeOpen, codeClose     string

	escape  func(string) string
	count   counter // visible text, as the network counts a message
	markup  counter // markup, as the network counts a message
	schemes []string
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

var webEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// slackCount counts mrkdwn as Slack does, escapes included.
func slackCount(s string) int {
	return runes(s) + 4*strings.Count(s, "&") + 3*(strings.Count(s, "<")+strings.Count(s, ">"))
}

func same(s string) string { return s }

var networks = map[Network]*network{
	Telegram: {
		name: Telegram, boldOpen: "<b>", boldClose: "</b>", italicOpen: "<i>", italicClose: "</i>",
		strikeOpen: "<s>", strikeClose: "</s>", codeOpen: "<code>", codeClose: "</code>",
		escape: htmlEscaper.Replace, count: utf16Len, markup: zero,
		schemes: []string{"http://", "https://", "tg://", "mailto:"},
	},
	Slack: {
		name: Slack, boldOpen: "*", boldClose: "*", italicOpen: "_", italicClose: "_",
		strikeOpen: "~", strikeClose: "~", codeOpen: "`", codeClose: "`",
		escape: htmlEscaper.Replace, count: slackCount, markup: runes,
		schemes: []string{"http://", "https://", "mailto:"},
	},
	WhatsApp: {
		name: WhatsApp, boldOpen: "*", boldClose: "*", italicOpen: "_", italicClose: "_",
		strikeOpen: "~", strikeClose: "~", codeOpen: "`", codeClose: "`",
		escape: same, count: runes, markup: runes,
		schemes: []string{"http://", "https://", "mailto:"},
	},
	Web: {
		name: Web, html: true, highlight: true, boldOpen: "<strong>", boldClose: "</strong>", italicOpen: "<em>", italicClose: "</em>",
		strikeOpen: "<del>", strikeClose: "</del>", codeOpen: "<code>", codeClose: "</code>",
		escape: webEscaper.Replace, count: runes, markup: zero,
		schemes: []string{"http://", "https://", "mailto:"},
	},
	Plain: {
		name: Plain, escape: same, count: runes, markup: runes,
		schemes: []string{"http://", "https://", "mailto:"},
	},
}

func init() {
	// A draft is the web room's answer as it is written: the same, but
	// its code is not coloured until it is finished (colouring is slow
	// beside rendering, and the block is still growing).
	d := *networks[Web]
	d.highlight = false
	networks[WebDraft] = &d
}

func networkFor(n Network) *network {
	if nw, ok := networks[n]; ok {
		return nw
	}
	return networks[Plain]
}

func (nw *network) textUnit(vis string) unit {
	return unit{kind: kText, out: nw.escape(vis), vis: vis, n: nw.count(vis)}
}

// allowed is whether a link's address may be a link on this network;
// any other address (javascript:, data:, a relative path) shows as text.
func (nw *network) allowed(url string) bool {
	l := strings.ToLower(url)
	for _, s := range nw.schemes {
		if strings.HasPrefix(l, s) && len(l) > len(s) {
			return true
		}
	}
	return false
}
