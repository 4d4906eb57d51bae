package web

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzUploadName: whatever name a browser sends, the cleaned name is one
// short line of valid UTF-8 that is no path, hides nothing (no control,
// bidi or zero-width characters) and is never empty.
func FuzzUploadName(f *testing.F) {
	for _, s := range []string{
		"photo.jpg", "../../etc/passwd", `..\..\windows\system32\cmd.exe`, "/abs/path/x.png", "..", ".", "...", "a/..",
		".hidden", "  . . spaced", "line\nbreak.txt", "tab\there", "nul\x00byte", "\x7fdel", "esc\x1b[31mred",
		"bidi \u202egnp.exe", "\u2066isolate\u2069.pdf", "zero\u200bwidth\u200d.doc", "\ufeffbom.txt", "sep\u2028\u2029.txt",
		strings.Repeat("a", 300) + ".jpeg", strings.Repeat("é", 200), strings.Repeat("😀", 150) + ".png",
		"[photo ref=tg_abc]", "{{.Token}}", "<script>alert(1)</script>.html", "\xff\xfeinvalid", "",
		"file.tar.gz", "no-ext-" + strings.Repeat("x", 130), "x." + strings.Repeat("e", 12),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := cleanFileName(raw)
		if got == "" {
			t.Fatalf("%q cleaned to nothing", raw)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("%q cleaned to invalid UTF-8 %q", raw, got)
		}
		if n := utf8.RuneCountInString(got); n > maxNameRunes {
			t.Fatalf("%q cleaned to %d runes, over %d", raw, n, maxNameRunes)
		}
		if strings.ContainsAny(got, `/\`) {
			t.Fatalf("%q cleaned to a path %q", raw, got)
		}
		if strings.HasPrefix(got, ".") || strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ") {
			t.Fatalf("%q cleaned to %q: a leading dot or an edge space", raw, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError ||
				(unicode.IsSpace(r) && r != ' ') {
				t.Fatalf("%q cleaned to %q, which keeps %U", raw, got, r)
			}
		}
		if strings.Contains(got, "  ") {
			t.Fatalf("%q cleaned to %q with a run of spaces", raw, got)
		}
		if again := cleanFileName(got); again != got {
			t.Fatalf("cleaning is not stable: %q -> %q -> %q", raw, got, again)
		}
	})
}
