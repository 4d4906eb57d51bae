package format

import (
	"fmt"
	"strings"
	"testing"
)

// answer4KB is a realistic answer of about 4 KB: headings, lists, code,
// links and bold, as a model writes them.
func answer4KB(b testing.TB) string {
	b.Helper()
	part := `## Step %d

The **rota** for this week is below; swaps go through [the form](https://example.com/rota?w=1&team=a).
Remember that _nobody_ covers two days in a row, and ~~Friday~~ is now optional.

- **Mon**: Anna, backup ` + "`ben`" + `
- **Tue**: Ben
  - needs the keys from Anna
1. Check the list.
2. Reply "swap".

` + "```python\ndef turn(people, day):\n    return people[day % len(people)]  # 0 <= day\n```\n\n"
	var sb strings.Builder
	for i := 0; sb.Len() < 4096; i++ {
		sb.WriteString(strings.Replace(part, "%d", string(rune('1'+i%9)), 1))
	}
	return sb.String()
}

func BenchmarkRender4KB(b *testing.B) {
	md := answer4KB(b)
	for _, tc := range []struct {
		network Network
		limit   int
	}{{Telegram, TelegramLimit}, {Slack, SlackLimit}, {WhatsApp, WhatsAppLimit}, {Web, 0}, {Plain, 0}} {
		b.Run(string(tc.network), func(b *testing.B) {
			b.SetBytes(int64(len(md)))
			b.ReportAllocs()
			for b.Loop() {
				// a fresh Renderer: Render would go on from the last op's
				if len(NewRenderer(tc.network, tc.limit).Render(md)) == 0 {
					b.Fatal("nothing rendered")
				}
			}
		})
	}
}

// BenchmarkRenderCut4KB is the same answer cut into Telegram pieces of 1000.
func BenchmarkRenderCut4KB(b *testing.B) {
	md := answer4KB(b)
	b.SetBytes(int64(len(md)))
	b.ReportAllocs()
	for b.Loop() {
		if len(NewRenderer(Telegram, 1000).Render(md)) < 4 {
			b.Fatal("not cut")
		}
	}
}

// hostileCases are inputs that cost goldmark time or memory quadratic in
// their length (issue 38): unclosed link destinations, emphasis
// delimiters that never match, runs of single delimiters and list
// markers nested on one line.
var hostileCases = []struct {
	name string
	unit string
	size int
}{
	{"link_opener_128KB", "[a](", 128 << 10},
	{"delims_underscore_star_900KB", "_a*", 900 << 10},
	{"star_1MB", "*a", 1 << 20},
	{"ordered_list_30KB", "1. ", 30 << 10},
	{"link_opener_1MB", "[a](", 1 << 20},
	{"delims_underscore_star_1MB", "_a*", 1 << 20},
	{"ordered_list_1MB", "1. ", 1 << 20},
}

func hostile(unit string, size int) string {
	return strings.Repeat(unit, size/len(unit))
}

// BenchmarkRenderHostile renders each hostile input once per op.
func BenchmarkRenderHostile(b *testing.B) {
	for _, tc := range hostileCases {
		md := hostile(tc.unit, tc.size)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(md)))
			b.ReportAllocs()
			for b.Loop() {
				if len(NewRenderer(Telegram, TelegramLimit).Render(md)) == 0 {
					b.Fatal("nothing rendered")
				}
			}
		})
	}
}

// BenchmarkRenderLive grows an answer in 4 KB steps, rendering it whole
// at each step as a channel shows a live answer: one op is the whole
// growth. Linear cost: the 1 MB op costs about 4 times the 256 KB one.
func BenchmarkRenderLive(b *testing.B) {
	for _, tc := range []struct{ name, unit string }{
		{"answer", ""}, {"star", "*a"}, {"link_opener", "[a]("}, {"delims", "_a*"}, {"words", "a "},
	} {
		for _, size := range []int{256 << 10, 1 << 20} {
			a := tc.unit
			if a == "" {
				a = answer4KB(b)
			}
			a = strings.Repeat(a, size/len(a)+1)[:size]
			b.Run(fmt.Sprintf("%s_%dKB", tc.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					for end := 4 << 10; end <= size; end += 4 << 10 {
						Render(a[:end], Telegram, TelegramLimit)
					}
				}
			})
		}
	}
}
