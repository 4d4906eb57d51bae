package format

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// TelegramValid reports whether Telegram's HTML parse mode accepts html,
// with the error Telegram's Bot API would answer. It follows Telegram's
// own parser (tdlib's parse_html): the tag subset, end tags matching the
// innermost open tag, `&` starting an entity only when one follows,
// attributes read and the unknown ones ignored.
func TelegramValid(html string) error {
	_, err := TelegramText(html)
	return err
}

// telegramTags are the tags Telegram's HTML parse mode knows.
var telegramTags = map[string]bool{
	"a": true, "b": true, "strong": true, "i": true, "em": true, "s": true, "strike": true, "del": true,
	"u": true, "ins": true, "tg-spoiler": true, "tg-emoji": true, "span": true, "pre": true, "code": true,
	"blockquote": true,
}

// ErrTelegramUTF8 is the Bot API's answer to text that is not UTF-8.
var ErrTelegramUTF8 = errors.New("Bad Request: text must be encoded in UTF-8")

func parseErr(format string, args ...any) error {
	return fmt.Errorf("Bad Request: can't parse entities: "+format, args...)
}

// TelegramText is the text Telegram shows for html in HTML parse mode
// (entities decoded, tags gone): its length in UTF-16 code units is what
// Telegram holds to the 4096 limit. The error is TelegramValid's.
func TelegramText(html string) (string, error) {
	if !utf8.ValidString(html) {
		return "", ErrTelegramUTF8
	}
	type open struct{ tag, arg string }
	var stack []open
	var out strings.Builder
	at := func(i int) byte { // the parser reads a NUL past the end
		if i < len(html) {
			return html[i]
		}
		return 0
	}
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f' }
	i := 0
	for i < len(html) {
		c := html[i]
		if c == '&' {
			if r, next, ok := htmlEntity(html, i); ok {
				out.WriteRune(r)
				i = next
				continue
			}
		}
		if c != '<' {
			out.WriteByte(c)
			i++
			continue
		}
		begin := i
		i++
		if at(i) != '/' {
			start := i
			for at(i) != 0 && !isSpace(at(i)) && at(i) != '>' {
				i++
			}
			if at(i) == 0 {
				return "", parseErr("Unclosed start tag at byte offset %d", begin)
			}
			tag := strings.ToLower(html[start:i])
			if !telegramTags[tag] {
				return "", parseErr("Unsupported start tag %q at byte offset %d", tag, begin)
			}
			arg := ""
			for at(i) != '>' {
				for at(i) != 0 && isSpace(at(i)) {
					i++
				}
				if at(i) == '>' {
					break
				}
				nameStart := i
				for at(i) != 0 && !isSpace(at(i)) && at(i) != '=' && at(i) != '>' {
					i++
				}
				name := html[nameStart:i]
				if name == "" {
					if at(i) == 0 {
						return "", parseErr("Unclosed start tag at byte offset %d", begin)
					}
					return "", parseErr("Empty attribute name in the tag %q at byte offset %d", tag, begin)
				}
				for at(i) != 0 && isSpace(at(i)) {
					i++
				}
				if at(i) != '=' {
					if tag == "blockquote" && name == "expandable" {
						continue
					}
					if at(i) == 0 {
						return "", parseErr("Unclosed start tag at byte offset %d", begin)
					}
					return "", parseErr("Expected equal sign in declaration of an attribute of the tag %q at byte offset %d", tag, begin)
				}
				i++
				for at(i) != 0 && isSpace(at(i)) {
					i++
				}
				if at(i) == 0 {
					return "", parseErr("Unclosed start tag %q at byte offset %d", tag, begin)
				}
				var value strings.Builder
				if q := at(i); q != '"' && q != '\'' {
					tokStart := i
					for isNameByte(at(i)) {
						i++
					}
					value.WriteString(strings.ToLower(html[tokStart:i]))
					if at(i) != 0 && !isSpace(at(i)) && at(i) != '>' {
						return "", parseErr("Unexpected end of name token at byte offset %d", tokStart)
					}
				} else {
					i++
					for at(i) != 0 && at(i) != q {
						if at(i) == '&' {
							if r, next, ok := htmlEntity(html, i); ok {
								value.WriteRune(r)
								i = next
								continue
							}
						}
						value.WriteByte(at(i))
						i++
					}
					if at(i) == q {
						i++
					}
				}
				if at(i) == 0 {
					return "", parseErr("Unclosed start tag at byte offset %d", begin)
				}
				switch {
				case tag == "a" && name == "href",
					tag == "code" && name == "class" && strings.HasPrefix(value.String(), "language-"),
					tag == "span" && name == "class" && strings.HasPrefix(value.String(), "tg-"),
					tag == "tg-emoji" && name == "emoji-id":
					arg = value.String()
				}
			}
			if tag == "span" && arg != "tg-spoiler" {
				return "", parseErr("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", begin)
			}
			i++ // the '>'
			stack = append(stack, open{tag: tag, arg: arg})
			continue
		}
		if len(stack) == 0 {
			return "", parseErr("Unexpected end tag at byte offset %d", begin)
		}
		i++ // the '/'
		nameStart := i
		for at(i) != 0 && !isSpace(at(i)) && at(i) != '>' {
			i++
		}
		name := html[nameStart:i]
		for at(i) != 0 && isSpace(at(i)) {
			i++
		}
		if at(i) != '>' {
			return "", parseErr("Unclosed end tag at byte offset %d", begin)
		}
		i++
		top := stack[len(stack)-1]
		if name != "" && name != top.tag {
			return "", parseErr("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", begin, top.tag, name)
		}
		stack = stack[:len(stack)-1]
	}
	if len(stack) > 0 {
		return "", parseErr("Can't find end tag corresponding to start tag %q", stack[len(stack)-1].tag)
	}
	return out.String(), nil
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-'
}

// htmlEntity decodes the character reference at s[i] ('&') the way
// Telegram does: numeric ones, and only lt, gt, amp and quot by name; the
// closing ';' may be missing. ok is false when '&' is just a character.
func htmlEntity(s string, i int) (r rune, next int, ok bool) {
	end := i + 1
	var v rune
	if end < len(s) && s[end] == '#' {
		end++
		hex := end < len(s) && s[end] == 'x'
		if hex {
			end++
		}
		for end < len(s) {
			d := -1
			c := s[end]
			switch {
			case c >= '0' && c <= '9':
				d = int(c - '0')
			case hex && c >= 'a' && c <= 'f':
				d = int(c-'a') + 10
			case hex && c >= 'A' && c <= 'F':
				d = int(c-'A') + 10
			}
			if d < 0 {
				break
			}
			if hex {
				v = v*16 + rune(d)
			} else {
				v = v*10 + rune(d)
			}
			if v >= 0x10ffff {
				return 0, 0, false
			}
			end++
		}
		if v == 0 || v >= 0xd800 && v <= 0xdfff {
			return 0, 0, false
		}
	} else {
		for end < len(s) && (s[end] >= 'a' && s[end] <= 'z' || s[end] >= 'A' && s[end] <= 'Z') {
			end++
		}
		switch s[i+1 : end] {
		case "lt":
			v = '<'
		case "gt":
			v = '>'
		case "amp":
			v = '&'
		case "quot":
			v = '"'
		default:
			return 0, 0, false
		}
	}
	if end < len(s) && s[end] == ';' {
		end++
	}
	return v, end, true
}
