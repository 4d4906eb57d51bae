package channels

import (
	"strings"
	"unicode/utf8"

	"github.com/botd-dev/botd/internal/textclip"
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
		var piece string
		piece, text = textclip.Head(text, limit)
		if piece != "" {
			out = append(out, piece)
		}
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}
