package format

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/yuin/goldmark/text"
	"golang.org/x/net/html"
)

var allNetworks = []Network{Telegram, Slack, WhatsApp, Web, Plain}

// renderWhole is Render before chunks: one goldmark parse of the whole
// answer. Chunks must not change what an answer within budget shows.
func renderWhole(markdown string, network Network, limit int) []string {
	nw := networkFor(network)
	src := []byte(markdown)
	w := &walker{nw: nw, src: src, atLineStart: true}
	w.block(md.Parser().Parse(text.NewReader(src)))
	return nw.split(w.units, limit)
}

// chunkCases are answers whose blocks span blank lines in every way that
// must keep a chunk whole.
var chunkCases = []string{
	"a\n\nb\n\nc",
	"- a\n\n- b\n\nafter",
	"- a\n- b\n\nafter the tight list",
	"1. a\n\n   more of a\n\n2. b\n\nafter",
	"- a\n\n  continued\nlazy\n\nnext",
	"```\ncode\n\nstill code\n```\n\nafter",
	"~~~~\ncode\n\n~~~\nstill code\n~~~~\n\nafter",
	"```\nnever closed\n\nall code\n\nto the end",
	"  ```\nindented fence\n\n  ```\n\nafter",
	"<!--\ncomment\n\nstill\n-->\n\nafter",
	"<pre>\n\npre text\n\n</pre>\n\nafter",
	"<script>\n\nx\n\n</script>\n\nafter",
	"<div>\nblock\n\nafter the div",
	"    indented\n\n    code\n\nafter",
	"> quote\n\n> another\n\nafter",
	"> quote\n>\n> same quote\n\nafter",
	"| a | b |\n|---|---|\n| 1 | 2 |\n\nafter",
	"see [the doc][1] and [x]\n\nmore\n\n[1]: https://x.example/doc\n[x]: https://x.example/x \"X\"",
	"[early]: https://x.example/e\n\nuse [early] here\n\n[early]: https://x.example/late",
	"setext\n===\n\nnext\n---\n\nlast",
	"# h1\n\n## h2\n\ntext",
	"***\n\n* a\n\n_b_\n\n___",
	"\n\n\nleading blank lines\n\n\n\ntrailing   \n\n\n",
	"a  \nhard break\n\nb\\\nbackslash",
	"text `code\n\nnot code` text\n\nmore",
	"[link\n\ntext](https://x.example)\n\nafter",
	"**bold\n\nnot bold**\n\nafter",
	"1) one\n\n2) two\n\nThree",
	"- [ ] task\n\n[not a task]",
	"\"quoted\"\n\n'single'\n\n(paren)\n\n!bang\n\n_under_\n\n<b>raw</b>",
}

func goldenAnswer(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "answer.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mixed joins random blocks of the cases into longer answers.
func mixed(r *rand.Rand, parts []string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(parts[r.IntN(len(parts))])
		b.WriteString([]string{"\n\n", "\n", "\n\n\n"}[r.IntN(3)])
	}
	return b.String()
}

// cutAt sets the shortest chunk for one test: 1 cuts at every place a
// chunk may end.
func cutAt(t testing.TB, n int) {
	old := minChunk
	minChunk = n
	t.Cleanup(func() { minChunk = old })
}

func TestChunksRenderAsWhole(t *testing.T) {
	cutAt(t, 1)
	inputs := append(slices.Clone(chunkCases), seeds...)
	inputs = append(inputs, goldenAnswer(t), answer4KB(t))
	r := rand.New(rand.NewPCG(1, 2))
	parts := append(slices.Clone(chunkCases), seeds...)
	for range 200 {
		inputs = append(inputs, mixed(r, parts, 1+r.IntN(12)))
	}
	for _, in := range inputs {
		for _, n := range allNetworks {
			for _, limit := range []int{0, 4096, 90} {
				got, want := NewRenderer(n, limit).Render(in), renderWhole(in, n, limit)
				if !slices.Equal(got, want) {
					t.Fatalf("%s limit %d: chunked render differs from the whole\ninput %q\ngot  %q\nwant %q", n, limit, in, got, want)
				}
			}
		}
	}
}

// TestRendererGrows renders answers as a live answer grows, byte by byte
// and in steps, and checks every step shows what Render shows for it.
func TestRendererGrows(t *testing.T) {
	for _, n := range []int{1, minChunk} {
		t.Run(fmt.Sprintf("chunks_of_%d", n), func(t *testing.T) {
			cutAt(t, n)
			testRendererGrows(t)
		})
	}
}

func testRendererGrows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	parts := append(slices.Clone(chunkCases), seeds...)
	answers := []string{
		goldenAnswer(t),
		mixed(r, parts, 20),
		// long enough to go plain part by part and past maxMarkdown
		strings.Repeat("[a](", 12<<10/bigScale) + "\n\nafter *the* flood\n\n" + strings.Repeat("word ", 3000),
		strings.Repeat(answer4KB(t), 40/bigScale),
		strings.Repeat("_a*", 20<<10/bigScale) + "\n\n" + strings.Repeat("x", 9000) + " tail",
	}
	for i, a := range answers {
		nets, limits, step := allNetworks, []int{0, 4096, 300}, 1
		if len(a) > 4096 {
			// a prime step, so steps end anywhere: inside words, runes,
			// markers and blank lines
			nets, limits, step = []Network{Telegram, Web}, []int{4096, 0}, 997
			if len(a) > 64<<10 {
				step = 4093
			}
		}
		for _, n := range nets {
			for _, limit := range limits {
				live := NewRenderer(n, limit)
				for end := 0; ; end += step {
					end = min(end, len(a))
					got, want := live.Render(a[:end]), NewRenderer(n, limit).Render(a[:end])
					if !slices.Equal(got, want) {
						t.Fatalf("answer %d %s limit %d at %d bytes: live render differs\ngot  %.300q\nwant %.300q", i, n, limit, end, got, want)
					}
					if end == len(a) {
						break
					}
				}
				// A text that does not extend the last one starts over.
				if got, want := live.Render("fresh **start**"), NewRenderer(n, limit).Render("fresh **start**"); !slices.Equal(got, want) {
					t.Fatalf("replaced text: got %q, want %q", got, want)
				}
			}
		}
	}
}

// hostileInputs are what costs goldmark time or memory out of proportion
// (issue 38) and what an attacker would try next.
func hostileInputs() []struct{ name, md string } {
	h := func(unit string, size int) string { return hostile(unit, size/bigScale) }
	var hs []struct{ name, md string }
	for _, c := range hostileCases {
		hs = append(hs, struct{ name, md string }{c.name, h(c.unit, c.size)})
		hs = append(hs, struct{ name, md string }{c.name + "_at_1MB", h(c.unit, 1<<20)})
	}
	for _, c := range []struct {
		name, unit string
		size       int
	}{
		{"image_opener", "![a](", 1 << 20},
		{"reference_opener", "[a][", 1 << 20},
		{"title_opener", `[a](b "`, 1 << 20},
		{"backtick_runs", "`a``", 1 << 20},
		{"html_openers", "<a <!-- ", 1 << 20},
		{"brackets", "[", 1 << 20},
		{"star_words", "*a ", 1 << 20},
		{"mixed_delims", "**_~a", 1 << 20},
		{"quote_depth", "> ", 1 << 20},
		{"bullet_depth", "- ", 1 << 20},
		{"words", "a ", 1 << 20},
	} {
		hs = append(hs, struct{ name, md string }{c.name, h(c.unit, c.size)})
	}
	lines := func(unit string, perLine, size int) string {
		size /= bigScale
		line := strings.Repeat(unit, perLine/len(unit)) + "\n"
		return strings.Repeat(line, size/len(line))
	}
	hs = append(hs,
		struct{ name, md string }{"link_opener_lines", lines("[a](", 80, 1<<20)},
		struct{ name, md string }{"delims_lines", lines("_a*", 80, 1<<20)},
		// many chunks, each just under its budget
		struct{ name, md string }{"link_opener_chunks", lines(strings.Repeat("[a](", 500)+"\n\nx", 2010, 1<<20)},
		struct{ name, md string }{"delims_chunks", lines(strings.Repeat("_a*", 1300)+"\n\nx", 3910, 1<<20)},
		struct{ name, md string }{"deep_lazy", strings.Repeat("> ", 16) + "a\n" + strings.Repeat("b\n", 500<<10/bigScale)},
		struct{ name, md string }{"wide_table", strings.Repeat("|a", 2000) + "\n" + strings.Repeat("|-", 2000) + "\n" + strings.Repeat("x\n", 100<<10/bigScale)},
	)
	return hs
}

// TestHostileBudget renders every hostile input on every network within
// a memory budget, as text the network accepts, with its letters kept.
func TestHostileBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("renders megabytes")
	}
	for _, h := range hostileInputs() {
		for _, n := range []Network{Telegram, Web, Slack} {
			t.Run(h.name+"/"+string(n), func(t *testing.T) {
				limit := map[Network]int{Telegram: TelegramLimit, Slack: SlackLimit, Web: 0}[n]
				var pieces []string
				alloc := allocated(func() { pieces = Render(h.md, n, limit) })
				// the output is about the input's size (escapes and a
				// piece's markup a few times it), and what is held at once
				// is the units of about one piece
				budget := uint64(24*len(h.md)+400*limit) + 8<<20
				t.Logf("%s %s: allocated %d KB for %d KB", h.name, n, alloc>>10, len(h.md)>>10)
				if alloc > budget {
					t.Errorf("allocated %d MB rendering %d KB, budget %d MB", alloc>>20, len(h.md)>>10, budget>>20)
				}
				var shown strings.Builder
				for _, p := range pieces {
					switch n {
					case Telegram:
						s, err := TelegramText(p)
						if err != nil {
							t.Fatalf("Telegram would refuse a piece: %v", err)
						}
						if u := utf16Len(s); u > TelegramLimit {
							t.Fatalf("piece of %d units", u)
						}
						shown.WriteString(s)
					case Web:
						if err := webAllowed(p); err != nil {
							t.Fatal(err)
						}
						shown.WriteString(webText(p))
					default:
						shown.WriteString(slackText.Replace(p))
					}
				}
				if got, want := letters(shown.String()), letters(h.md); got != want {
					t.Errorf("%d letters and digits shown, the answer has %d", got, want)
				}
			})
		}
	}
}

// webText is the text a browser shows for web output.
func webText(s string) string {
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			b.Write(z.Text())
		}
	}
}

var slackText = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func letters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}

// TestRenderGoesOn renders growing answers of several chats at once
// through Render, as channels do, and checks every step shows what a
// fresh Renderer shows for it.
func TestRenderGoesOn(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	parts := append(slices.Clone(chunkCases), seeds...)
	answers := []string{strings.Repeat(answer4KB(t), 8), mixed(r, parts, 60), strings.Repeat("*a", 20<<10)}
	var wg sync.WaitGroup
	for i, a := range answers {
		for _, n := range []Network{Telegram, Slack, Web} {
			limit := map[Network]int{Telegram: TelegramLimit, Slack: 3000}[n]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for end := 0; ; end += 1531 {
					end = min(end, len(a))
					if got, want := Render(a[:end], n, limit), NewRenderer(n, limit).Render(a[:end]); !slices.Equal(got, want) {
						t.Errorf("answer %d %s at %d bytes: Render differs from a fresh Renderer", i, n, end)
						return
					}
					if end == len(a) {
						return
					}
				}
			}()
		}
	}
	wg.Wait()
}

// TestLiveLinear grows answers to 256 KB and to 1 MB in 4 KB steps: what
// rendering every step allocates grows with the answer's length, not its
// square (4 times the length may cost at most 6 times, a square 16).
func TestLiveLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("renders megabytes")
	}
	for _, tc := range []struct{ name, unit string }{
		{"answer", ""},
		{"star", "*a"},
		{"link_opener", "[a]("},
		{"words", "a "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grow := func(size int) uint64 {
				a := tc.unit
				if a == "" {
					a = answer4KB(t)
				}
				a = strings.Repeat(a, size/len(a)+1)[:size]
				return allocated(func() {
					for end := 4 << 10; end <= size; end += 4 << 10 {
						Render(a[:end], Telegram, TelegramLimit) // as a channel does
					}
				})
			}
			small, big := grow(256<<10/bigScale), grow(1<<20/bigScale)
			t.Logf("%d KB: %d KB, %d KB: %d KB", 256/bigScale, small>>10, 1024/bigScale, big>>10)
			if big > 6*small {
				t.Errorf("growing 4 times as long allocated %d KB, not %d KB: more than linear", big>>10, small>>10)
			}
		})
	}
}

// FuzzChunks checks the places chunks are cut: an answer within budget
// shows the same whether parsed in chunks or whole.
func FuzzChunks(f *testing.F) {
	cutAt(f, 1)
	for _, s := range append(slices.Clone(chunkCases), seeds...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		if len(md) > maxChunk {
			return
		}
		for _, n := range []Network{Telegram, Web} {
			if got, want := NewRenderer(n, 0).Render(md), renderWhole(md, n, 0); !slices.Equal(got, want) {
				k := chunker{}
				k.scan(md)
				for _, c := range k.chunks {
					if c.plain {
						return // over budget: shown as typed on purpose
					}
				}
				if c, ok := k.tail(md); ok && c.plain {
					return
				}
				t.Fatalf("%s: chunks differ from the whole\n%q\ngot  %q\nwant %q", n, md, got, want)
			}
		}
	})
}

// FuzzRendererGrows checks a Renderer going on from a prefix shows what
// a fresh one shows.
func FuzzRendererGrows(f *testing.F) {
	cutAt(f, 1)
	for _, s := range append(slices.Clone(chunkCases), seeds...) {
		f.Add(s, uint16(len(s)/2), uint16(300))
	}
	f.Fuzz(func(t *testing.T, md string, cut, limit uint16) {
		at := int(cut) % (len(md) + 1)
		for _, n := range []Network{Telegram, Slack, Web} {
			live := NewRenderer(n, int(limit))
			live.Render(md[:at])
			if got, want := live.Render(md), NewRenderer(n, int(limit)).Render(md); !slices.Equal(got, want) {
				t.Fatalf("%s limit %d, grown from %d bytes: got %q, want %q\n%q", n, limit, at, got, want, md)
			}
		}
	})
}
