// Package textclip shortens text that strangers or tools wrote before botd
// shows it on one line: in an error a chat member reads, a caption, a log
// field, a prompt. A line break there would let the text pose as a line of
// botd's own; bidi controls would let it reorder what stands around it.
package textclip

import (
	"strings"
	"unicode/utf8"
)

// OneLine turns control characters (line breaks included), DEL and bidi
// overrides and isolates into spaces, folds runs of white space into one
// and trims the ends, then clips to max runes like Clip (max ≤ 0: no clip).
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return ' '
		}
		return r
	}, s)), " ")
	if max > 0 {
		s = Clip(s, max)
	}
	return s
}

// Clip keeps the first max runes of s and marks the cut with "…"; s is
// returned as it is when it is no longer. It never splits a rune.
func Clip(s string, max int) string {
	if head, cut := Prefix(s, max); cut {
		return head + "…"
	}
	return s
}

// Prefix is the first max runes of s, whole runes only, and whether
// anything was left out: the one place text is cut by rune count (a
// clipped line, a split message, a page's text).
func Prefix(s string, max int) (string, bool) {
	if max < 0 {
		max = 0
	}
	if len(s) <= max || utf8.RuneCountInString(s) <= max {
		return s, false
	}
	i := 0
	for j := range s {
		if i == max {
			return s[:j], true
		}
		i++
	}
	return s, false
}

// Head is the start of text up to limit runes, cut where a reader expects
// a cut: at a paragraph break, else a line break, else a space, in the
// second half of the window (a break earlier would leave a stub), else
// hard at the limit. rest is what follows, without the break. Text no
// longer than limit is all head.
func Head(text string, limit int) (head, rest string) {
	window, cut := Prefix(text, limit)
	if !cut {
		return text, ""
	}
	end := len(window)
	// One byte past the cut lets a break that sits exactly at the limit
	// be found; breaks are ASCII, so the byte is whole.
	window = text[:end+1]
	at, skip := -1, 0
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(window, sep); i > 0 && i >= len(window)/2 {
			at, skip = i, len(sep)
			break
		}
	}
	if at < 0 {
		at, skip = end, 0
	}
	return strings.TrimRight(text[:at], " \n"), strings.TrimLeft(text[at+skip:], " \n")
}
