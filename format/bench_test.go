package format

import (
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
				if len(Render(md, tc.network, tc.limit)) == 0 {
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
		if len(Render(md, Telegram, 1000)) < 4 {
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
				if len(Render(md, Telegram, TelegramLimit)) == 0 {
					b.Fatal("nothing rendered")
				}
			}
		})
	}
}
