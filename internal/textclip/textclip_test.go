package textclip_test

import (
	"testing"

	"github.com/botd-dev/botd/internal/textclip"
)

func TestOneLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "hello world", 0, "hello world"},
		{"line breaks and tabs fold", "a\nb\r\n\tc  d", 0, "a b c d"},
		{"ends trimmed", "  \n x \t", 0, "x"},
		{"control characters and DEL", "a\x00b\x1bc\x7fd", 0, "a b c d"},
		{"bidi override and isolate", "a\u202eb\u2067c", 0, "a b c"},
		{"unicode spaces fold", "a\u00a0\u2003b", 0, "a b"},
		{"clipped in runes", "héllo wörld", 5, "héllo…"},
		{"exactly max is kept", "héllo", 5, "héllo"},
		{"clip after folding", "a\n\n\nbcdef", 3, "a b…"},
		{"empty", "", 10, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := textclip.OneLine(tt.in, tt.max); got != tt.want {
				t.Errorf("OneLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"日本語テキスト", 3, "日本語…"},
		{"a\nb", 5, "a\nb"}, // Clip keeps lines; OneLine folds them
		{"abc", 0, "…"},
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := textclip.Clip(tt.in, tt.max); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestPrefixAndHead(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
		cut  bool
	}{
		{"héllo", 5, "héllo", false}, {"héllo", 2, "hé", true}, {"日本語", 1, "日", true}, {"", 3, "", false}, {"abc", 0, "", true},
	} {
		if got, cut := textclip.Prefix(tc.s, tc.max); got != tc.want || cut != tc.cut {
			t.Errorf("Prefix(%q, %d) = %q, %v", tc.s, tc.max, got, cut)
		}
	}
	for _, tc := range []struct {
		s          string
		limit      int
		head, rest string
	}{
		{"one two", 10, "one two", ""},
		{"first para\n\nsecond para", 15, "first para", "second para"},
		{"a line\nanother line", 12, "a line", "another line"},
		{"words and more words", 12, "words and", "more words"},
		{"abcdefghij", 4, "abcd", "efghij"},       // no break: hard cut
		{"a bcdefghijkl", 8, "a bcdefg", "hijkl"}, // a break in the first half is a stub: hard cut
		{"ab cd", 2, "ab", "cd"},                  // a break exactly at the limit
	} {
		if h, r := textclip.Head(tc.s, tc.limit); h != tc.head || r != tc.rest {
			t.Errorf("Head(%q, %d) = %q, %q; want %q, %q", tc.s, tc.limit, h, r, tc.head, tc.rest)
		}
	}
}
