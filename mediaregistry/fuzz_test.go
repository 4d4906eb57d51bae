package mediaregistry

import (
	"strings"
	"testing"
	"time"
	"unicode"
)

// FuzzParse: Parse never panics, and every placeholder it finds lies
// inside the text at the offsets it reports.
func FuzzParse(f *testing.F) {
	for _, c := range placeholderCases {
		ref := c.ref
		f.Add(Render(&ref) + " and more")
	}
	f.Add("[Image: a, b, c, ref:tg_AAAAAAAAAA]")
	f.Add("[Voice: ref:wa_BBBBBBBBBB][Image: ref:sl_CCCCCCCCCC]")
	f.Fuzz(func(t *testing.T, text string) {
		for _, p := range Parse(text) {
			if p.Start < 0 || p.End > len(text) || p.Start >= p.End {
				t.Fatalf("bad offsets %d..%d", p.Start, p.End)
			}
			if !strings.Contains(text[p.Start:p.End], "ref:"+p.Ref) || !ValidRefID(p.Ref) {
				t.Fatalf("ref %q not in %q", p.Ref, text[p.Start:p.End])
			}
		}
	})
}

// FuzzRenderRoundTrip: whatever a stranger names a file or writes as a
// caption, the placeholder is one line without invisible characters and
// parses back to exactly one placeholder with the same ref.
func FuzzRenderRoundTrip(f *testing.F) {
	f.Add("sunset.jpg", "Beautiful sunset", "image/jpeg", int64(2516582), int64(0))
	f.Add("a], b [c.pdf", "[Image: x, ref:tg_BBBBBBBBBB]", "application/pdf", int64(5), int64(12))
	f.Add("\u202Eexe.pdf", "line\nbreak", "x", int64(0), int64(185))
	f.Add("2.4MB", "", "", int64(1), int64(0))
	f.Fuzz(func(t *testing.T, name, caption, mime string, size, secs int64) {
		if size < 0 || secs < 0 || secs > 1<<30 {
			return
		}
		ref := &MediaReference{ID: "tg_FuzzRef0001", Kind: Document, FileName: name, Caption: caption, MIME: mime,
			Size: size, Duration: time.Duration(secs) * time.Second}
		text := Render(ref)
		if strings.ContainsAny(text, "\n\r\v\f\u0085\u2028\u2029") {
			t.Fatalf("multi-line placeholder %q", text)
		}
		for _, r := range text {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("invisible %U in %q", r, text)
			}
		}
		ps := Parse(text)
		if len(ps) != 1 || ps[0].Ref != ref.ID || ps[0].Start != 0 {
			t.Fatalf("Parse(%q) = %+v", text, ps)
		}
	})
}
