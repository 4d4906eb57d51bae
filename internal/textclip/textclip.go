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
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	i := 0
	for j := range s {
		if i == max {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
