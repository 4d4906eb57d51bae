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
	// Names as a sender's device may send them, before cleaning: paths,
	// tabs, look-alike brackets and colons.
	f.Add("[Document: ../x/report.pdf, ref:tg_AAAAAAAAAA]")
	f.Add(`[Image: C:\temp\photo.jpg, 2.4MB, image/jpeg, ref:tg_AAAAAAAAAA]`)
	f.Add("[Document: .., ref:tg_AAAAAAAAAA]")
	f.Add("[Document: a\tb.pdf, 12KB, ref:tg_AAAAAAAAAA]")
	f.Add("[Image: \uff3bImage\uff1a x.jpg, ref\uff1atg_AAAAAAAAAA\uff3d, ref:tg_BBBBBBBBBB]")
	f.Add("\u3010Voice: a.ogg, ref:wa_BBBBBBBBBB\u3011 [Voice: a.ogg, ref:wa_BBBBBBBBBB]")
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
	f.Add("../x/report.pdf", "", "application/pdf", int64(10), int64(0))
	f.Add(`C:\temp\photo.jpg`, "", "image/jpeg", int64(10), int64(0))
	f.Add("/etc/passwd", "", "", int64(0), int64(0))
	f.Add("..", "", "", int64(0), int64(0))
	f.Add("a\tb.pdf", "tab\there", "application/pdf", int64(0), int64(0))
	f.Add("\uff3bImage\uff1a x.jpg, ref\uff1atg_AAAAAAAAAA\uff3d", "\u3010Voice: y", "", int64(0), int64(0))
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
		// The name is one path element: nothing a file system or a
		// reader takes for a directory, and no hidden file.
		if n := ps[0].Name; strings.ContainsAny(n, "/\\\t") || strings.HasPrefix(n, ".") {
			t.Fatalf("name %q from %q", n, name)
		}
	})
}
