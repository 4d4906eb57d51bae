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
	raw = newlines(raw)
	raw = internalBlock.ReplaceAllString(raw, "")
	raw = internalOpen.ReplaceAllString(raw, "")

	var kept []string
	var notes []string
	fenced := false
	for _, line := range strings.Split(raw, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			kept = append(kept, line)
			continue
		}
		if !fenced && strings.Contains(line, voiceTag) {
			a.Voice = true
			line = strings.ReplaceAll(line, voiceTag, "")
			trimmed = strings.TrimSpace(line)
		}
		if fenced || !strings.HasPrefix(trimmed, "MEDIA:") {
			kept = append(kept, line)
			continue
		}
		p, rel, after, err := mediaLine(ws, strings.TrimPrefix(trimmed, "MEDIA:"))
		if after != "" {
			kept = append(kept, after)
		}
		if err != nil {
			refused = append(refused, err)
			notes = append(notes, fmt.Sprintf("(I could not send the file %s.)", p))
			continue
		}
		a.Media = append(a.Media, rel)
	}
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

// newlines ends every line with "\n": a bare CR (or CRLF) from a model
// ends a MEDIA: line as surely as a newline does.
func newlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// mediaPrefixTries bounds how many shorter readings of an unquoted MEDIA:
// line are tried as paths, so a long line of prose costs a few opens.
const mediaPrefixTries = 8

// mediaLine reads what follows "MEDIA:": the path it names (p, as
// written, for a refusal note), the file it is (rel), and any text after
// the path, which the caller keeps as text of the answer so nothing the
// model wrote is lost. A quoted path ends at its closing quote
// (MEDIA: "photo.jpg" {"caption": "x"}); an unquoted one is the whole
// rest of the line when that names a file (paths may hold spaces), else
// the longest run of its first few words that does (MEDIA: a.png and
// here is why).
func mediaLine(ws groups.Workspace, rest string) (p, rel, after string, err error) {
	rest = strings.TrimSpace(rest)
	if rest != "" && strings.ContainsRune("`'\"", rune(rest[0])) {
		if end := strings.IndexByte(rest[1:], rest[0]); end >= 0 {
			p, after = rest[1:1+end], strings.TrimSpace(rest[2+end:])
			rel, err = mediaPath(ws, p)
			return p, rel, after, err
		}
	}
	p = strings.Trim(rest, "`'\"")
	rel, err = mediaPath(ws, p)
	if err == nil {
		return p, rel, "", nil
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
		word := strings.Trim(rest[:end], "`'\"")
		if wrel, werr := mediaPath(ws, word); werr == nil {
			return word, wrel, strings.TrimSpace(rest[end:]), nil
		}
	}
	return p, "", "", err
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
