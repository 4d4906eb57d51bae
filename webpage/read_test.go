package webpage_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"

	"github.com/botd-dev/botd/webpage"
)

// para is a paragraph long enough that the extractor takes it for prose.
func para(words ...string) string {
	s := strings.Join(words, " ")
	return "<p>" + strings.Repeat(s+" ", max(1, 300/(len(s)+1))) + "</p>\n"
}

// newsPage is a page as sites serve them: a cookie banner, navigation,
// a promo aside and a footer around one article.
const newsPage = `<!DOCTYPE html>
<html lang="en-GB"><head>
<meta charset="utf-8">
<title>Tide tables return to the harbour | Harbour Gazette</title>
<meta property="og:site_name" content="Harbour Gazette">
<meta name="description" content="The harbour master restores the printed tide tables.">
<meta name="author" content="Ada Quill">
<meta property="article:published_time" content="2026-03-04T09:30:00+01:00">
</head><body>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve your experience. Accept all cookies or manage preferences.</div>
<nav class="site-nav"><ul><li><a href="/">Home</a></li><li><a href="/sport">Sport</a></li><li><a href="/weather">Weather</a></li></ul></nav>
<main><article>
<h1>Tide tables return to the harbour</h1>
<p class="byline">By Ada Quill</p>
<p>The harbour master said on Tuesday that the printed tide tables will return to the noticeboard by the slipway, after
fishermen and sailors asked for them at three meetings in a row. The tables had been removed last spring when the
council moved the information online, and many older members of the sailing club said they could not read the website
on their phones while out on the water.</p>
<h2>What changes</h2>
<p>From next month the tables will be printed weekly and pinned up every Monday morning. A copy will also be kept at the
<a href="https://example.org/office">harbour office</a>, where anyone can ask for it at the counter during opening
hours, and the lifeboat station will keep a laminated copy by its door for visitors who arrive at the weekend.</p>
<ul><li>Weekly tables on the noticeboard</li><li>A copy at the harbour office</li></ul>
<p>The council said the cost would be small and that the website would stay up for those who prefer it. Members of the
sailing club welcomed the decision and said they hoped the printed forecast for wind would follow in the summer.</p>
</article></main>
<aside class="promo sidebar">Subscribe today and get 50% off your first year of the Harbour Gazette!</aside>
<footer class="site-footer">© 2026 Harbour Gazette. All rights reserved. Privacy policy. Terms of use.</footer>
</body></html>`

func TestReadArticle(t *testing.T) {
	a, err := webpage.Read(strings.NewReader(newsPage), webpage.Options{URL: "https://gazette.example/news/tides",
		ContentType: "text/html; charset=utf-8"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Title != "Tide tables return to the harbour | Harbour Gazette" && a.Title != "Tide tables return to the harbour" {
		t.Errorf("Title = %q", a.Title)
	}
	checks := []struct{ field, got, want string }{
		{"SiteName", a.SiteName, "Harbour Gazette"},
		{"Byline", a.Byline, "Ada Quill"},
		{"Lang", a.Lang, "en-GB"},
		{"Published", a.Published, "2026-03-04T08:30:00Z"},
		{"Excerpt", a.Excerpt, "The harbour master restores the printed tide tables."},
	}
	for _, c := range checks {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s = %q, want it to hold %q", c.field, c.got, c.want)
		}
	}
	for _, want := range []string{
		"The harbour master said on Tuesday",
		"A copy will also be kept at the harbour office, where",              // the link's text, without its URL
		"\n\nWhat changes\n\n",                                               // a heading on its own line
		"\nWeekly tables on the noticeboard\nA copy at the harbour office\n", // list items each on a line
		"at the weekend.\n\n",                                                // paragraphs apart by a blank line
	} {
		if !strings.Contains(a.Text, want) {
			t.Errorf("Text lacks %q:\n%s", want, a.Text)
		}
	}
	for _, bad := range []string{"cookies", "Sport", "Subscribe", "All rights reserved", "https://example.org"} {
		if strings.Contains(a.Text, bad) {
			t.Errorf("Text holds the boilerplate %q:\n%s", bad, a.Text)
		}
	}
}

// TestReadSiteNameFromURL: a page that names no site is named by its host.
func TestReadSiteNameFromURL(t *testing.T) {
	page := "<html><head><title>Notes</title></head><body><article>" + para("Notes about the river and its bridges.") +
		para("More notes about the ferry and its timetable.") + "</article></body></html>"
	a, err := webpage.Read(strings.NewReader(page), webpage.Options{URL: "https://notes.example:8443/a/b", ContentType: "text/html"})
	if err != nil {
		t.Fatal(err)
	}
	if a.SiteName != "notes.example" {
		t.Errorf("SiteName = %q, want the host notes.example", a.SiteName)
	}
}

// TestReadCharsets: the page's text reads right whatever the charset and
// wherever it is declared, or when it is not declared at all.
func TestReadCharsets(t *testing.T) {
	const word = "Café naïve façade — “quoted” über Straße"
	const jp = "日本語のページです。東京の天気は晴れ。"
	body := func(text, head string) string {
		return "<html><head>" + head + "<title>T</title></head><body><article>" +
			strings.Repeat("<p>"+text+" plain words to make a paragraph long enough to be prose. "+text+"</p>\n", 4) +
			"</article></body></html>"
	}
	// lateUTF8 has its first non-ASCII byte past the 1024 bytes a
	// <meta> prescan looks at.
	lateUTF8 := "<html><head><title>T</title></head><body><!--" + strings.Repeat("x", 1200) + "--><article>" +
		strings.Repeat("<p>"+word+" plain words to make a paragraph long enough to be prose.</p>\n", 4) + "</article></body></html>"
	tests := []struct {
		name, contentType string
		page              []byte
		want              string
	}{
		{"windows-1252 in the header", "text/html; charset=windows-1252", enc(t, charmap.Windows1252, body(word, "")), word},
		{"iso-8859-1 in the header reads as windows-1252", "text/html; charset=ISO-8859-1", enc(t, charmap.Windows1252, body(word, "")), word},
		{"windows-1252 in a meta", "text/html", enc(t, charmap.Windows1252, body(word, `<meta charset="windows-1252">`)), word},
		{"windows-1252 in an http-equiv meta", "", enc(t, charmap.Windows1252,
			body(word, `<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">`)), word},
		{"windows-1252 undeclared", "text/html", enc(t, charmap.Windows1252, body(word, "")), word},
		{"utf-8 undeclared", "text/html", []byte(body(word, "")), word},
		{"utf-8 undeclared, first non-ASCII past 1024 bytes", "text/html", []byte(lateUTF8), word},
		{"Shift_JIS in a meta", "text/html", enc(t, japanese.ShiftJIS, body(jp, `<meta charset="Shift_JIS">`)), jp},
		{"Shift_JIS in the header", "text/html; charset=shift_jis", enc(t, japanese.ShiftJIS, body(jp, "")), jp},
		{"EUC-JP in a meta", "text/html", enc(t, japanese.EUCJP, body(jp, `<meta charset="euc-jp">`)), jp},
		{"UTF-16LE with a BOM", "text/html", enc(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), body(word, "")), word},
		{"a BOM beats the header", "text/html; charset=windows-1252", append([]byte("\xef\xbb\xbf"), body(word, "")...), word},
		{"XHTML's XML declaration", "application/xhtml+xml", enc(t, charmap.ISO8859_15,
			`<?xml version="1.0" encoding="ISO-8859-15"?>`+"\n"+`<html xmlns="http://www.w3.org/1999/xhtml">`+
				strings.TrimPrefix(body("Café naïve façade €", ""), "<html>")), "Café naïve façade €"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := webpage.Read(bytes.NewReader(tt.page), webpage.Options{ContentType: tt.contentType})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, tt.want) {
				t.Errorf("Text lacks %q:\n%s", tt.want, a.Text)
			}
			if !utf8.ValidString(a.Text) {
				t.Error("Text is not valid UTF-8")
			}
		})
	}
}

// TestReadSavedWindows1252 reads the checked-in windows-1252 page (written
// for these tests, converted with iconv).
func TestReadSavedWindows1252(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "windows-1252.html"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := webpage.Read(f, webpage.Options{ContentType: "text/html"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Crème brûlée", "“smart quotes”", "€5", "Æsir"} {
		if !strings.Contains(a.Text, want) {
			t.Errorf("Text lacks %q:\n%s", want, a.Text)
		}
	}
	if a.Title != "Café de la Gare – menu" {
		t.Errorf("Title = %q", a.Title)
	}
}

func enc(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encoding the test page: %v", err)
	}
	return b
}

func TestReadRefuses(t *testing.T) {
	html := []byte("<!DOCTYPE html><html><body><p>hello</p></body></html>")
	tests := []struct {
		name, contentType string
		page              []byte
		max               int64
		want              error
	}{
		{"a PDF by its type", "application/pdf", []byte("%PDF-1.7\n"), 0, webpage.ErrNotHTML},
		{"JSON by its type, even if it looks like HTML", "application/json", html, 0, webpage.ErrNotHTML},
		{"a PDF sent untyped", "", []byte("%PDF-1.7\n%âãÏÓ\n"), 0, webpage.ErrNotHTML},
		{"a PNG sent as octet-stream", "application/octet-stream", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 0, webpage.ErrNotHTML},
		{"one byte over the cap", "text/html", html, int64(len(html) - 1), webpage.ErrTooLarge},
		{"HTML sent untyped", "", html, 0, nil},
		{"exactly at the cap", "text/html", html, int64(len(html)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := webpage.Read(bytes.NewReader(tt.page), webpage.Options{ContentType: tt.contentType, MaxInput: tt.max})
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestReadTooLargeStopsReading: a page over the cap is not read to its
// end: Read stops one byte past the cap.
func TestReadTooLargeStopsReading(t *testing.T) {
	r := &countingReader{r: io.MultiReader(strings.NewReader("<html><body>"), endless{})}
	_, err := webpage.Read(r, webpage.Options{ContentType: "text/html", MaxInput: 1 << 20})
	if !errors.Is(err, webpage.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if r.n > 1<<20+1 {
		t.Errorf("read %d bytes of an endless page with a cap of %d", r.n, 1<<20)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestReadReaderError(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := webpage.Read(io.MultiReader(strings.NewReader("<html>"), failing{boom}), webpage.Options{ContentType: "text/html"})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want it to wrap %v", err, boom)
	}
}

type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }

// TestReadDeepNesting: 100 000 nested elements, past the parser's limit,
// still give the page's text, and the text past the depth.
func TestReadDeepNesting(t *testing.T) {
	tests := []struct{ name, open, close string }{
		{"divs", "<div>", "</div>"},
		{"unclosed divs", "<div>", ""},
		{"divs and spans", "<div><span>", "</span></div>"},
		{"formatting elements", "<b><i>", ""},
		{"tables", "<table><tr><td>", "</td></tr></table>"},
		{"bare table cells", "<table><td>", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 100_000
			var b strings.Builder
			b.WriteString("<html><head><title>Deep</title></head><body><article>")
			b.WriteString(para("The surface paragraph of a very deep page is here."))
			b.WriteString(strings.Repeat(tt.open, n))
			b.WriteString(para("The deepest paragraph of the page says hello from below."))
			b.WriteString(strings.Repeat(tt.close, n))
			b.WriteString("</article></body></html>")
			a, err := webpage.Read(strings.NewReader(b.String()), webpage.Options{ContentType: "text/html"})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"The surface paragraph", "The deepest paragraph"} {
				if !strings.Contains(a.Text, want) {
					t.Errorf("Text lacks %q (%d runes)", want, utf8.RuneCountInString(a.Text))
				}
			}
		})
	}
}

// TestReadAllBoilerplate: a page with nothing but a cookie wall,
// navigation and a footer reads without error, and none of it passes for
// the page's text.
func TestReadAllBoilerplate(t *testing.T) {
	page := `<html><head><title>Login</title></head><body>
<div class="cookie-banner">We use cookies. Accept all cookies or manage your preferences.</div>
<nav><ul><li><a href="/">Home</a></li><li><a href="/about">About</a></li><li><a href="/login">Log in</a></li></ul></nav>
<footer class="footer">© 2026 Example Ltd. Privacy policy. Terms of use. Imprint.</footer>
</body></html>`
	a, err := webpage.Read(strings.NewReader(page), webpage.Options{ContentType: "text/html"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Title != "Login" {
		t.Errorf("Title = %q", a.Title)
	}
	for _, bad := range []string{"cookies", "Home", "Log in", "Privacy"} {
		if strings.Contains(a.Text, bad) {
			t.Errorf("Text holds the boilerplate %q: %q", bad, a.Text)
		}
	}
}

// TestReadShortPageChrome: on a page with little text the extractor
// takes everything it can find; the chrome is gone before it looks, and
// what only looks like chrome stays.
func TestReadShortPageChrome(t *testing.T) {
	const story = "<p>The ferry to the island leaves at nine every morning and returns at five.</p>"
	tests := []struct {
		name, chrome string
		keep         string // text in the chrome that must stay ("" when it must go)
	}{
		{"cookie banner by class", `<div class="site-cookie-banner cookie-banner">Accept all cookies</div>`, ""},
		{"consent manager by id", `<div id="onetrust-banner-sdk"><p>We value your privacy and use cookies</p></div>`, ""},
		{"consent dialog", `<div role="dialog" aria-label="Consent"><p>Manage cookie preferences</p></div>`, ""},
		{"aria modal", `<div aria-modal="true"><p>Subscribe to our newsletter</p></div>`, ""},
		{"nav", `<nav><a href="/">Home</a> <a href="/news">News</a></nav>`, ""},
		{"role navigation", `<div role="navigation"><a href="/">Home</a> <a href="/news">News</a></div>`, ""},
		{"site footer", `<footer>© 2026 Island Ferries Ltd</footer>`, ""},
		{"site header by role", `<div role="banner"><a href="/">Island Ferries</a> Tickets Timetables</div>`, ""},
		{"a recipe's cookie list stays", `<ul class="cookie-list"><li>Oat cookies with raisins</li></ul>`,
			"Oat cookies with raisins"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := "<html><head><title>Ferry</title></head><body>" + tt.chrome + story + "</body></html>"
			a, err := webpage.Read(strings.NewReader(page), webpage.Options{ContentType: "text/html"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, "The ferry to the island leaves at nine") {
				t.Errorf("the story is lost: %q", a.Text)
			}
			if tt.keep != "" {
				if !strings.Contains(a.Text, tt.keep) {
					t.Errorf("Text lacks %q: %q", tt.keep, a.Text)
				}
				return
			}
			for _, bad := range []string{"cookie", "Home", "Ltd", "Subscribe", "Tickets"} {
				if strings.Contains(a.Text, bad) {
					t.Errorf("Text holds the chrome's %q: %q", bad, a.Text)
				}
			}
		})
	}
}

// TestReadClipsText: a long article is cut at a paragraph's end within
// MaxText runes, and the text says it was cut.
func TestReadClipsText(t *testing.T) {
	var b strings.Builder
	b.WriteString("<html><body><article>")
	for i := range 200 {
		b.WriteString(para("Paragraph", strings.Repeat("é", i%7+1), "of a long article about rivers and bridges."))
	}
	b.WriteString("</article></body></html>")
	const maxText = 5000
	a, err := webpage.Read(strings.NewReader(b.String()), webpage.Options{ContentType: "text/html", MaxText: maxText})
	if err != nil {
		t.Fatal(err)
	}
	body, tail, ok := strings.Cut(a.Text, "\n\n[The page's text goes on:")
	if !ok {
		t.Fatalf("the clipped text does not say it was cut:\n%s", a.Text[len(a.Text)-200:])
	}
	if n := utf8.RuneCountInString(body); n > maxText || n < maxText/2 {
		t.Errorf("kept %d runes, want at most %d and more than half", n, maxText)
	}
	if !strings.HasSuffix(body, "bridges.") {
		t.Errorf("the cut is not at a paragraph's end: …%q", body[len(body)-40:])
	}
	if !strings.Contains(tail, "more characters were cut") {
		t.Errorf("tail = %q", tail)
	}

	short, err := webpage.Read(strings.NewReader(newsPage), webpage.Options{ContentType: "text/html", MaxText: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(short.Text, "[The page's text goes on") {
		t.Error("a text under MaxText says it was cut")
	}
}
