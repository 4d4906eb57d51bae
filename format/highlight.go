package format

import (
	"strings"
	"time"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// Limits of syntax highlighting: what the model writes (and may have been
// steered to write) is lexed by chroma's regular expressions, which
// backtrack, so a block is highlighted only while small (a 4 KB block
// takes about 15 ms: BenchmarkRenderWebHighlighted). highlightBudget is a
// safety net for a pathological lexer, far above any real block's time
// even on a loaded machine, so that the same text renders the same.
const (
	maxHighlightBytes = 8 << 10
	highlightBudget   = 10 * time.Second
)

// tokens lexes code in lang, or returns nil: no such language, too long,
// too slow, or a lexer error. Each token's class is chroma's short class
// ("k", "s2", "nf"), "" for plain text.
func tokens(lang, code string) []chroma.Token {
	if len(code) > maxHighlightBytes {
		return nil
	}
	lx := lexers.Get(strings.ToLower(lang))
	if lx == nil {
		return nil
	}
	lx = chroma.Coalesce(lx)
	done := make(chan []chroma.Token, 1)
	go func() {
		ts, err := chroma.Tokenise(lx, nil, code)
		if err != nil {
			ts = nil
		}
		done <- ts
	}()
	t := time.NewTimer(highlightBudget)
	defer t.Stop()
	select {
	case ts := <-done:
		// A lexer may end the text with a line break it did not have.
		if n := len(ts); n > 0 && !strings.HasSuffix(code, "\n") {
			ts[n-1].Value = strings.TrimSuffix(ts[n-1].Value, "\n")
		}
		return ts
	case <-t.C:
		return nil // the lexer finishes alone and is dropped
	}
}

// highlighted writes code as coloured spans, whose only attribute is a
// class from a fixed set ("hl-k"): the text is escaped like any other
// and no style is inline, so the page's strict CSP holds. It reports
// false, writing nothing, when the code is not highlighted.
func (w *walker) highlighted(lang, code string) bool {
	ts := tokens(lang, code)
	if ts == nil {
		return false
	}
	w.flush()
	for _, tk := range ts {
		class := tokenClass(tk.Type)
		for i, part := range strings.Split(tk.Value, "\n") {
			if i > 0 {
				w.newline()
				w.flush()
			}
			if part == "" {
				continue
			}
			if class == "" {
				w.word(part)
				continue
			}
			w.open(`<span class="hl-`+class+`">`, "</span>")
			w.word(part)
			w.close()
		}
	}
	return true
}

// tokenClass is the class a token is coloured by: a few kinds, as
// editors colour code (keywords, strings, numbers, comments, functions
// and types, builtins, tags and attributes, diff lines); "" leaves it
// plain. The stylesheet colours hl-<class>.
func tokenClass(t chroma.TokenType) string {
	switch {
	case t.InCategory(chroma.Keyword):
		return "k"
	case t.InCategory(chroma.Comment):
		return "c"
	case t.InSubCategory(chroma.LiteralString):
		return "s"
	case t.InSubCategory(chroma.LiteralNumber):
		return "m"
	case t == chroma.Operator || t == chroma.OperatorWord:
		return "o"
	case t == chroma.NameFunction || t == chroma.NameClass || t == chroma.NameFunctionMagic || t == chroma.NameDecorator:
		return "nf"
	case t.InSubCategory(chroma.NameBuiltin):
		return "nb"
	case t == chroma.NameTag:
		return "nt"
	case t == chroma.NameAttribute:
		return "na"
	case t == chroma.GenericDeleted:
		return "gd"
	case t == chroma.GenericInserted:
		return "gi"
	case t == chroma.GenericHeading || t == chroma.GenericSubheading:
		return "gh"
	}
	return ""
}
