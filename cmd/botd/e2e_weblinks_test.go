package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/doctext/doctexttest"
	"github.com/botd-dev/botd/format"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/websearch"
	"github.com/botd-dev/botd/websearch/searchtest"
)

// linkModel opens the links and runs the searches a question asks for, and
// answers with what came back: the article markers of a <web_page>, a
// <document>'s markers, the first address of <search_results>, or the
// tool's error. A follow-up ("what else…") is answered from the page's
// note when the context has one, and opens the page again otherwise.
type linkModel struct {
	wire *fakeModel
	srv  *httptest.Server

	mu   sync.Mutex
	reqs []string
}

var (
	webMarkerRe = regexp.MustCompile(`(?:MARKER|BOILER)-[A-Z]+-\d+`)
	webURLRe    = regexp.MustCompile(`https?://[^\s<>"\\]+`)
	searchForRe = regexp.MustCompile(`search for ([a-z ]+)`)
	noteRe      = regexp.MustCompile(`(?s)<note ref="ln_[0-9A-Za-z]+"[^>]*>(.*?)</note>`)
)

func newLinkModel(t *testing.T) *linkModel {
	m := &linkModel{wire: &fakeModel{t: t, wire: "openai"}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *linkModel) snapshot() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.reqs...)
}

func (m *linkModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.reqs = append(m.reqs, string(body))
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	req := readChat(body)
	if req.LastRole == "tool" {
		text := req.LastText
		found := strings.Join(webMarkerRe.FindAllString(text, -1), " ")
		switch {
		case strings.Contains(text, "<web_page "):
			m.wire.text(w, "Page says: "+found)
		case strings.Contains(text, "<document "):
			m.wire.text(w, "Document says: "+found)
		case strings.Contains(text, "<search_results "):
			m.wire.text(w, "Search found: "+webURLRe.FindString(text))
		default:
			m.wire.text(w, "Tool said: "+strings.Join(strings.Fields(text), " "))
		}
		return
	}
	asked := newText(body)
	switch {
	case searchForRe.MatchString(asked):
		m.wire.toolCall(w, "web_search", fmt.Sprintf(`{"query":%q}`, searchForRe.FindStringSubmatch(asked)[1]))
	case strings.Contains(asked, "what else"):
		if n := noteRe.FindStringSubmatch(req.User); n != nil {
			m.wire.text(w, "From my notes: "+strings.Join(webMarkerRe.FindAllString(n[1], -1), " "))
			return
		}
		m.wire.toolCall(w, "fetch_url", fmt.Sprintf(`{"url":%q}`, webURLRe.FindString(req.User)))
	case strings.Contains(asked, "what does"):
		u := webURLRe.FindAllString(asked, -1)
		if len(u) == 0 { // "the article": the link posted before
			u = webURLRe.FindAllString(req.User, -1)
		}
		if len(u) == 0 {
			m.wire.text(w, "Which link?")
			return
		}
		m.wire.toolCall(w, "fetch_url", fmt.Sprintf(`{"url":%q}`, u[len(u)-1]))
	default:
		m.wire.text(w, "Hello.")
	}
}

// articleHTML is a news page as sites make them: navigation, a cookie
// banner, a promo and a footer around the article.
const articleHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Town council approves new library | Riverside Courier</title>
<meta property="og:site_name" content="Riverside Courier"><meta name="author" content="Jane Doe"></head>
<body>
<div id="cookie-consent" class="cookie-banner">We use cookies. BOILER-COOKIE-1 Accept all cookies or manage preferences.</div>
<header><nav class="site-nav"><ul><li><a href="/">Home</a></li><li><a href="/news">News BOILER-NAV-2</a></li><li><a href="/sport">Sport</a></li></ul></nav></header>
<main>
<article>
<h1>Town council approves new library</h1>
<p class="byline">By Jane Doe</p>
<p>The town council voted on Tuesday evening to build a new public library on the site of the old bus depot, ending a debate that had run for more than three years. MARKER-ARTICLE-1 The vote was seven to two.</p>
<p>The building will have two floors, a children's room, study spaces for forty people and a small café run by a local charity. Construction is expected to begin next spring and to take about eighteen months, according to the council's planning office.</p>
<p>Residents who spoke at the meeting welcomed the decision, though several asked the council to keep the old library open until the new one is finished. The council agreed, and MARKER-ARTICLE-2 the old branch will stay open with its current hours.</p>
<p>The project is funded by a regional grant and by the sale of two council-owned buildings, so council tax will not rise to pay for it, the treasurer told the meeting.</p>
</article>
<aside class="promo">Subscribe now for only $1! BOILER-PROMO-3 Limited offer.</aside>
</main>
<footer class="site-footer"><p>© 2026 Riverside Courier. BOILER-FOOTER-4 All rights reserved. <a href="/privacy">Privacy</a></p></footer>
</body></html>`

// site is a web server on loopback (opened to botd by
// internet.fetch.allow_private) that counts the requests for each path.
type site struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newSite(t *testing.T, pages map[string][2]string) *site {
	s := &site{hits: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", p[0])
		io.WriteString(w, p[1])
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) hitsOf(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// webConfig's scripted model calls fetch_url and web_search at once:
// every tool is offered from the first turn (lazy offering:
// e2e_lazytools_test.go).
var webConfig = strings.Replace(continuityConfig, "agent:\n", "agent:\n  lazy_tools: false\n", 1) + `internet:
  fetch: {allow_private: ["127.0.0.0/8"]}
  search: {provider: searxng, base_url: "%s"}
`

// The real daemon reads links only when asked: a link posted is not
// fetched; asked about, the article is fetched once and the model gets
// its text without the page's boilerplate; a follow-up needs no second
// GET; a linked PDF is read as a document; a metadata address is refused
// before any connection; web_search reaches SearXNG and its results reach
// the model.
func TestLinksAndSearchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	model := newLinkModel(t)
	pdf := doctexttest.PDF([]doctexttest.Page{{Lines: []string{"The budget report says MARKER-PDF-5 for next year."}}}, doctexttest.PDFOptions{})
	web := newSite(t, map[string][2]string{
		"/news/library": {"text/html; charset=utf-8", articleHTML},
		"/report.pdf":   {"application/pdf", string(pdf)},
	})
	search := searchtest.NewSearXNG(t, websearch.Result{Title: "Main Street Pharmacy — opening hours", URL: "https://pharmacy.example/hours",
		Snippet: "Open today until 6 pm."})
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(webConfig, telegramtest.Token, tg.URL(), model.srv.URL, search.Config().BaseURL))

	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	group, ann, carol := telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), telegramtest.Person(43, "Carol")
	article := web.srv.URL + "/news/library"
	msgID := 10
	say := func(who models.User, text string) {
		t.Helper()
		msgID++
		u := telegramtest.Text(group, who, msgID, text)
		u.Message.Date = int(time.Now().Unix())
		tg.Enqueue(u)
	}
	ask := func(text, want string) []string {
		t.Helper()
		before, sent := len(model.snapshot()), len(tg.Sent())
		say(carol, text)
		var got string
		// The answer is one message (grown by edits while written), in
		// Telegram's HTML: what it shows is what counts.
		testwait.Within(t, 60*time.Second, "the answer to "+text, func() bool {
			for _, s := range tg.Sent()[sent:] {
				if s.Method == "sendMessage" {
					html, _, _ := tg.Shown(s.ChatID, s.MessageID)
					got, _ = format.TelegramText(html)
					return strings.Contains(got, want)
				}
			}
			return false
		})
		if !strings.Contains(got, want) {
			t.Fatalf("asked %q: answered %q, want %q in it", text, got, want)
		}
		return model.snapshot()[before:]
	}

	say(ann, "look at this "+article)
	ask("@Andy hello", "Hello.")
	if n := web.hitsOf("/news/library"); n != 0 {
		t.Fatalf("the link was fetched %d times on receipt; want never until asked", n)
	}

	reqs := ask("@Andy what does the article say?", "Page says: MARKER-ARTICLE-1 MARKER-ARTICLE-2")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests for the article, want 2 (question, then the page)", len(reqs))
	}
	page := readChat([]byte(reqs[1])).LastText
	for _, want := range []string{`<web_page url="` + article + `"`, `title="Town council approves new library`, "MARKER-ARTICLE-1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page the model got lacks %q:\n%s", want, page)
		}
	}
	if b := regexp.MustCompile(`BOILER-[A-Z]+-\d`).FindAllString(page, -1); len(b) > 0 {
		t.Errorf("the page the model got keeps boilerplate %q:\n%s", b, page)
	}
	if n := web.hitsOf("/news/library"); n != 1 {
		t.Fatalf("the article was fetched %d times, want once", n)
	}

	ask("@Andy what else did it say?", "From my notes: MARKER-ARTICLE-1")
	if n := web.hitsOf("/news/library"); n != 1 {
		t.Errorf("the follow-up fetched the article again (%d GETs in all)", n)
	}

	ask("@Andy what does "+web.srv.URL+"/report.pdf say?", "Document says: MARKER-PDF-5")

	reqs = ask("@Andy what does http://169.254.169.254/latest/meta-data say?", "Tool said:")
	if last := readChat([]byte(reqs[len(reqs)-1])).LastText; !strings.Contains(last, "forbidden") {
		t.Errorf("the metadata address was not refused as forbidden: %q", last)
	}

	ask("@Andy please search for pharmacy hours", "Search found: https://pharmacy.example/hours")
	if q := search.Queries(); len(q) != 1 || q[0] != "pharmacy hours" {
		t.Errorf("SearXNG got queries %q, want one: pharmacy hours", q)
	}
}

// A page at the size cap (10 MB of HTML) asked about: botd run stays small
// while a box child reads the page, and the model gets its text.
func TestWebPagePeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 MB page")
	}
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><title>The long report</title></head><body><nav><a href="/">Home BOILER-NAV-1</a></nav><article><h1>The long report</h1>`)
	b.WriteString("<p>It begins: MARKER-LONG-1 and then goes on.</p>")
	para := "<p>" + strings.Repeat("The committee met again and read every line of the plan, word by word. ", 8) + "</p>\n"
	for b.Len()+len(para) < 9_800_000 {
		b.WriteString(para)
	}
	b.WriteString("</article></body></html>")
	dir := t.TempDir()
	tg := telegramtest.New(t)
	model := newLinkModel(t)
	web := newSite(t, map[string][2]string{"/long": {"text/html; charset=utf-8", b.String()}})
	search := searchtest.NewSearXNG(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(webConfig, telegramtest.Token, tg.URL(), model.srv.URL, search.Config().BaseURL))
	p := startBin(t, plainBotd(t), dir, "run", "--config", "botd.yaml")
	p.waitLog(t, "botd running")
	before := vmHWM(t, p.cmd.Process.Pid)

	sent := len(tg.Sent())
	u := telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(43, "Carol"), 50, "@Andy what does "+web.srv.URL+"/long say?")
	u.Message.Date = int(time.Now().Unix())
	tg.Enqueue(u)
	var got string
	testwait.Within(t, 120*time.Second, "the answer about the long page", func() bool {
		for _, s := range tg.Sent()[sent:] {
			if s.Method == "sendMessage" {
				got = s.Text
				return true
			}
		}
		return false
	})
	if !strings.Contains(got, "Page says: MARKER-LONG-1") {
		t.Fatalf("answered %q", got)
	}
	peak := vmHWM(t, p.cmd.Process.Pid)
	var child int
	for _, c := range childPeaks(p.Logs()) {
		if c.name == "mcp-webpage" {
			child = c.kb
		}
	}
	t.Logf("a %d MB page: botd run peak RSS %d MB (%d MB before), the page reader's child %d MB", b.Len()>>20, peak>>10, before>>10, child>>10)
	if child == 0 {
		t.Errorf("no box child read the page:\n%s", p.Logs())
	}
	if peak > peakLimitKB {
		t.Errorf("botd run peaked at %d MB, over %d MB", peak>>10, peakLimitKB>>10)
	}
}
