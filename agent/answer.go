package agent

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/botd-dev/botd/groups"
)

var (
	internalBlock = regexp.MustCompile(`(?is)<internal>.*?</internal>`)
	// An unclosed block hides the rest: the model meant none of it for
	// the chat, and leaking half a thought is worse than saying less.
	internalOpen = regexp.MustCompile(`(?is)<internal>.*$`)
)

// answer is the model's final text split into what goes to the chat.
type answer struct {
	Text string
	// Media are paths relative to the group folder, checked to be files
	// inside it.
	Media []string
	// Voice: the answer carried [[audio_as_voice]]; its text is to be
	// spoken and sent as a voice note, its audio files as voice notes.
	Voice bool
}

// voiceTag asks for the answer as a voice note. Stripped wherever it
// stands outside a code block.
const voiceTag = "[[audio_as_voice]]"

// empty reports whether there is nothing to send.
func (a answer) empty() bool { return a.Text == "" && len(a.Media) == 0 }

// parseAnswer strips internal notes and picks out MEDIA: lines. A refused
// path is logged by the caller (refused) and mentioned in the text, so the
// chat learns that a file is missing instead of silently not getting it.
func parseAnswer(raw string, ws groups.Workspace) (a answer, refused []error) {
	raw = internalBlock.ReplaceAllString(newlines(raw), "")
	raw = internalOpen.ReplaceAllString(raw, "")

	var notes []string
	kept, voice := walkAnswer(raw, func(rest string, _ bool) (keep string, ok bool) {
		p, rel, after, err := mediaLine(ws, rest)
		if err != nil {
			refused = append(refused, err)
			notes = append(notes, fmt.Sprintf("(I could not send the file %s.)", p))
		} else {
			a.Media = append(a.Media, rel)
		}
		return after, after != ""
	})
	a.Voice = voice
	text := strings.TrimSpace(collapseBlankLines(strings.Join(kept, "\n")))
	if len(notes) > 0 {
		if text != "" {
			text += "\n\n"
		}
		text += strings.Join(notes, "\n")
	}
	a.Text = text
	return a, refused
}

// walkAnswer is the one reading of an answer's lines, for the final answer
// (parseAnswer) and for the live one shown while the model writes
// (visibleSoFar): raw (newlines already normalised, internal notes gone)
// is split into lines, code fences are tracked, the voice tag is removed
// outside them, and each line outside a fence that begins with "MEDIA:" is
// handed to media with what follows the prefix (last: it is the final
// line so far). media returns the text to keep in the line's place, if
// any; every other line is kept as it is.
func walkAnswer(raw string, media func(rest string, last bool) (keep string, ok bool)) (kept []string, voice bool) {
	lines := strings.Split(raw, "\n")
	fenced := false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			kept = append(kept, line)
			continue
		}
		if !fenced && strings.Contains(line, voiceTag) {
			voice = true
			line = strings.ReplaceAll(line, voiceTag, "")
			trimmed = strings.TrimSpace(line)
		}
		if fenced || !strings.HasPrefix(trimmed, "MEDIA:") {
			kept = append(kept, line)
			continue
		}
		if keep, ok := media(strings.TrimPrefix(trimmed, "MEDIA:"), i == len(lines)-1); ok {
			kept = append(kept, keep)
		}
	}
	return kept, voice
}

// newlines ends every line with "\n": a bare CR (or CRLF) from a model
// ends a MEDIA: line as surely as a newline does.
func newlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// mediaPrefixTries bounds how many shorter readings of a MEDIA: line are
// tried as paths, so a long line of prose costs a few opens.
const mediaPrefixTries = 8

// quotes are the marks a path may be quoted with.
const quotes = "`'\""

// jsonTail is what a model leaves after a path it copied out of JSON
// (MEDIA: ./a.png"} or ./a.png", "caption": "x"}): closing quotes,
// braces, brackets and the commas and colons between fields.
const jsonTail = quotes + "{}[],:"

// mediaLine reads what follows "MEDIA:": the path it names (p, as
// written, for a refusal note), the file it is (rel), and any text after
// the path, which the caller keeps as text of the answer so nothing the
// model wrote is lost.
//
// A quoted path ends at its closing quote (MEDIA: "photo.jpg" {"caption":
// "x"}); inside it a backslash escapes the quote and itself, as in JSON
// (MEDIA: "a \"b\", c.png"), and when that reading names no file the
// later quotes are tried as the closing one (MEDIA: "say "hi".png"). An
// unquoted path is the whole rest of the line when that names a file
// (paths may hold spaces), else the rest without the JSON it ends in,
// else the longest run of its first few words that does (MEDIA: a.png and
// here is why), else the part before a quote, brace or comma that JSON
// left behind (MEDIA: ./a.png", "caption": "x"}).
func mediaLine(ws groups.Workspace, rest string) (p, rel, after string, err error) {
	rest = strings.TrimSpace(rest)
	if cands := quotedReadings(rest); len(cands) > 0 {
		for _, c := range cands {
			if rel, err := mediaPath(ws, c.path); err == nil {
				return c.path, rel, cleanAfter(c.after), nil
			}
		}
		p, after = cands[0].path, cleanAfter(cands[0].after)
		_, err = mediaPath(ws, p)
		return p, "", after, err
	}
	var cands []reading
	p = strings.Trim(rest, quotes)
	cands = append(cands, reading{p, ""})
	// The path without the JSON the line ends in; a refusal names it.
	named := p
	if t := strings.TrimRight(rest, jsonTail); t != rest && t != "" && cleanAfter(rest[len(t):]) == "" {
		named = strings.TrimLeft(t, quotes)
		cands = append(cands, reading{named, ""})
	}
	// The ends of the first few words, tried longest first: a path with
	// a space in it wins over the shorter path that is its first word.
	var ends []int
	inWord := false
	for i, r := range rest {
		space := unicode.IsSpace(r)
		if space && inWord {
			if ends = append(ends, i); len(ends) == mediaPrefixTries {
				break
			}
		}
		inWord = !space
	}
	for _, end := range slices.Backward(ends) {
		cands = append(cands, reading{strings.Trim(rest[:end], quotes), rest[end:]})
	}
	// Where JSON takes over from the path: before a quote, brace,
	// bracket or comma, the last such place first.
	var cuts []int
	for i := 1; i < len(rest) && len(cuts) < mediaPrefixTries; i++ {
		if strings.IndexByte(`"'`+"`"+`{}[],`, rest[i]) >= 0 && strings.IndexByte(jsonTail, rest[i-1]) < 0 {
			cuts = append(cuts, i)
		}
	}
	for _, c := range slices.Backward(cuts) {
		cands = append(cands, reading{strings.TrimLeft(strings.TrimSpace(rest[:c]), quotes), rest[c:]})
	}
	for i, c := range cands {
		if c.path == "" || (i > 0 && c.path == p) {
			continue
		}
		if rel, err := mediaPath(ws, c.path); err == nil {
			return c.path, rel, cleanAfter(c.after), nil
		}
	}
	_, err = mediaPath(ws, named)
	return named, "", "", err
}

// reading is one way to read a MEDIA: line: the path, and the text after
// it.
type reading struct{ path, after string }

// quotedReadings reads a MEDIA: value that begins with a quote: first with
// backslash escapes (\" and \\, as JSON writes them), then with each later
// quote of the same kind as the closing one, the last first. None when
// the quote is never closed.
func quotedReadings(rest string) []reading {
	if rest == "" || strings.IndexByte(quotes, rest[0]) < 0 {
		return nil
	}
	q := rest[0]
	var out []reading
	var b strings.Builder
	escaped := false
	for i := 1; i < len(rest); i++ {
		c := rest[i]
		if c == '\\' && i+1 < len(rest) && (rest[i+1] == q || rest[i+1] == '\\') {
			b.WriteByte(rest[i+1])
			i++
			escaped = true
			continue
		}
		if c == q {
			out = append(out, reading{b.String(), rest[i+1:]})
			break
		}
		b.WriteByte(c)
	}
	var closing []int
	for i := 1; i < len(rest); i++ {
		if rest[i] == q {
			closing = append(closing, i)
		}
	}
	if len(closing) > mediaPrefixTries {
		closing = closing[len(closing)-mediaPrefixTries:]
	}
	for _, end := range slices.Backward(closing) {
		r := reading{rest[1:end], rest[end+1:]}
		if len(out) > 0 && !escaped && r == out[0] {
			continue
		}
		out = append(out, r)
	}
	return out
}

// cleanAfter is the text after a path, kept in the answer: what JSON
// left at its start (closing quotes and braces, the comma before the next
// field) is dropped, and nothing is kept when that is all there is.
func cleanAfter(s string) string {
	s = strings.TrimSpace(s)
	if strings.TrimLeft(s, jsonTail+" \t") == "" {
		return ""
	}
	return strings.TrimSpace(strings.TrimLeft(strings.TrimLeft(s, quotes+"}]"), ",; \t"))
}

// mediaPath checks that p names a regular file inside the group folder and
// returns it relative to the folder.
func mediaPath(ws groups.Workspace, p string) (string, error) {
	f, rel, err := ws.Open(p)
	if err != nil {
		return "", fmt.Errorf("MEDIA: %w", err)
	}
	f.Close()
	return rel, nil
}

// collapseBlankLines leaves at most one empty line in a row, so removed
// MEDIA: lines and internal notes do not leave holes in the message.
func collapseBlankLines(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := 0
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			blank++
			if blank > 1 {
				continue
			}
			l = ""
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
