package channels

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	para := strings.Repeat("a", 3000) + "\n\n" + strings.Repeat("b", 3000)
	tests := []struct {
		name  string
		text  string
		limit int
		want  []int // rune lengths of the pieces
	}{
		{"empty", "  ", 10, nil},
		{"exact", strings.Repeat("x", 4096), 4096, []int{4096}},
		{"one over", strings.Repeat("x", 4097), 4096, []int{4096, 1}},
		{"paragraph", para, 4096, []int{3000, 3000}},
		{"line", strings.Repeat("a", 10) + "\n" + strings.Repeat("b", 10), 15, []int{10, 10}},
		{"words", "aaaa bbbb cccc", 9, []int{9, 4}},
		{"multibyte", strings.Repeat("é", 5), 2, []int{2, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text, tt.limit)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d pieces, want %d: %q", len(got), len(tt.want), got)
			}
			for i, p := range got {
				if n := utf8.RuneCountInString(p); n != tt.want[i] || n > tt.limit {
					t.Errorf("piece %d has %d runes, want %d", i, n, tt.want[i])
				}
			}
		})
	}
}
