package format

import (
	"strings"
	"testing"
)

// Code in a named language comes back coloured by classes only, its text
// escaped; what cannot be highlighted comes back plain.
func TestWebHighlight(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		want     []string
		not      []string
	}{
		{"go", "```go\nfunc f() string { return \"x\" } // done\n```",
			[]string{`<span class="hl-k">func</span> <span class="hl-nf">f</span>`, `<span class="hl-s">&quot;x&quot;</span>`, `<span class="hl-c">// done</span>`}, nil},
		{"markup in the code stays text", "```html\n</code></pre><script>alert(1)</script>\n```",
			[]string{`&lt;/<span class="hl-nt">code</span>&gt;`, `&lt;<span class="hl-nt">script</span>&gt;`}, []string{"<script", "</code></pre><"}},
		{"unknown language is plain", "```nosuchlanguage\nx = 1\n```",
			[]string{`<pre><code class="language-nosuchlanguage">x = 1</code></pre>`}, []string{"<span"}},
		{"no language is plain", "```\nfunc f() {}\n```", []string{"<pre><code>func f() {}</code></pre>"}, []string{"<span"}},
		{"too long is plain", "```go\n" + strings.Repeat("x := 1\n", maxHighlightBytes/7+1) + "```", nil, []string{"<span"}},
		{"lines kept", "```python\na = 1\n\nb = 2\n```", []string{"a <span class=\"hl-o\">=</span> <span class=\"hl-m\">1</span>\n\nb"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := Render(tc.md, Web, 0)
			if len(ps) != 1 {
				t.Fatalf("%d pieces", len(ps))
			}
			out := ps[0]
			if err := webAllowed(out); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("has %q:\n%s", n, out)
				}
			}
		})
	}
	// A draft (an answer still being written) is not coloured yet.
	if p := Render("```go\nx := 1\n```", WebDraft, 0); strings.Contains(p[0], "span") || !strings.Contains(p[0], `<pre><code class="language-go">x := 1</code></pre>`) {
		t.Errorf("web draft: %s", p[0])
	}
	// Other networks show code plain.
	if p := Render("```go\nx := 1\n```", Telegram, 0); strings.Contains(p[0], "span") {
		t.Errorf("telegram got spans: %s", p[0])
	}
}

// BenchmarkRenderWebHighlighted is an answer with a 4 KB Go block, as a
// room renders it (every draft of a streamed answer).
func BenchmarkRenderWebHighlighted(b *testing.B) {
	code := strings.Repeat("func add(a, b int) int {\n\treturn a + b // sum\n}\n\n", 80)
	md := "Here is the code:\n\n```go\n" + code + "```\n"
	b.SetBytes(int64(len(md)))
	b.ReportAllocs()
	for b.Loop() {
		Render(md, Web, 0)
	}
}

// BenchmarkRenderWebPlain is the same block without a language.
func BenchmarkRenderWebPlain(b *testing.B) {
	code := strings.Repeat("func add(a, b int) int {\n\treturn a + b // sum\n}\n\n", 80)
	md := "Here is the code:\n\n```\n" + code + "```\n"
	b.SetBytes(int64(len(md)))
	b.ReportAllocs()
	for b.Loop() {
		Render(md, Web, 0)
	}
}
