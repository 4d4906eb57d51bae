package tools_test

import (
	"strings"
	"testing"

	"github.com/botd-dev/botd/tools"
)

func TestFirstSentence(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Search the web. Each search is billed.", "Search the web."},
		{"Where is it? Look here.", "Where is it?"},
		{"Stop! Now.", "Stop!"},
		{"Open https://example.com/a.b later. Then more.", "Open https://example.com/a.b later."},
		{"Read a v1.2 file.\nThen more.", "Read a v1.2 file."},
		{"No full stop at all", "No full stop at all"},
		{"", ""},
	} {
		if got := tools.FirstSentence(c.in); got != c.want {
			t.Errorf("FirstSentence(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// maxIndexLine bounds the first sentence of a description: all a lazy
// tool index (agent/lazy.go) shows of a tool before it is loaded.
const maxIndexLine = 100

// TestFirstSentenceIndexesEveryTool: every tool's first sentence stands
// alone as its index line, saying what it does and when to reach for it,
// in at most maxIndexLine bytes and without a cut abbreviation.
func TestFirstSentenceIndexesEveryTool(t *testing.T) {
	for _, s := range tools.All {
		first := tools.FirstSentence(s.Def(widest).Description)
		switch {
		case len(first) > maxIndexLine:
			t.Errorf("%s: first sentence is %d bytes, over %d: %q", s.Name, len(first), maxIndexLine, first)
		case len(first) < 40:
			t.Errorf("%s: first sentence too short to say what the tool does and when: %q", s.Name, first)
		case !strings.HasSuffix(first, ".") || strings.HasSuffix(first, "e.g.") || strings.HasSuffix(first, "i.e."):
			t.Errorf("%s: first sentence is cut short: %q", s.Name, first)
		}
	}
}
