package matrix

import (
	"regexp"
	"strings"
	"testing"
)

// The hand-written checks accept exactly what the spec's grammar, written
// as the regexps they replaced, accepts: hostile and edge inputs alike.
func TestMXCGrammarMatchesTheSpecRegexps(t *testing.T) {
	serverRe := regexp.MustCompile(`^(?:[A-Za-z0-9.-]{1,255}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$`)
	mediaRe := regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	long := strings.Repeat("a", 255)
	inputs := []string{
		"", "a", "example.org", "example.org:8448", "example.org:", "example.org:123456", "example.org:12a",
		"[::1]", "[::1]:8448", "[::1]x", "[]", "[:]", "[" + strings.Repeat("1", 45) + "]", "[" + strings.Repeat("1", 46) + "]",
		"[::1", "::1", "a:b:c", long, long + "a", long + ":1", "exa mple.org", "example.org/../x", "ex%2fa",
		"a_b", "a-b", "-", "_", "a\x00b", "ä", "example.org:00000", "[::g]", "[1.2.3.4]", "[::1]]", "[[::1]", ":8448",
	}
	for _, in := range inputs {
		if got, want := validServerName(in), serverRe.MatchString(in); got != want {
			t.Errorf("validServerName(%q) = %v, the grammar says %v", in, got, want)
		}
		if got, want := validMediaID(in), mediaRe.MatchString(in); got != want {
			t.Errorf("validMediaID(%q) = %v, the grammar says %v", in, got, want)
		}
	}
}

// FuzzMXCGrammar holds the same on any input.
func FuzzMXCGrammar(f *testing.F) {
	serverRe := regexp.MustCompile(`^(?:[A-Za-z0-9.-]{1,255}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$`)
	mediaRe := regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	for _, s := range []string{"example.org:8448", "[::1]:1", "abc_DEF-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if validServerName(in) != serverRe.MatchString(in) || validMediaID(in) != mediaRe.MatchString(in) {
			t.Errorf("%q: the hand-written check and the grammar disagree", in)
		}
	})
}
