package channels

import (
	"strings"
	"unicode/utf8"
)

// Split cuts text into pieces of at most limit characters (runes),
// preferring paragraph breaks, then line breaks, then spaces, and only then
// a hard cut. Pieces are trimmed of the break they were cut at.
func Split(text string, limit int) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	var out []string
	for utf8.RuneCountInString(text) > limit {
		// Byte offset of the first rune past the limit.
		cut := len(text)
		n := 0
		for i := range text {
			if n == limit {
				cut = i
				break
			}
			n++
		}
		// One byte past the cut lets a break that sits exactly at the
		// limit be found; breaks are ASCII, so the byte is whole.
		window := text[:cut+1]
		at, skip := -1, 0
		for _, sep := range []string{"\n\n", "\n", " "} {
			// A break in the first half would leave a stub of a piece.
			if i := strings.LastIndex(window, sep); i > 0 && i >= len(window)/2 {
				at, skip = i, len(sep)
				break
			}
		}
		if at < 0 {
			at, skip = cut, 0
		}
		piece := strings.TrimRight(text[:at], " \n")
		if piece != "" {
			out = append(out, piece)
		}
		text = strings.TrimLeft(text[at+skip:], " \n")
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}
