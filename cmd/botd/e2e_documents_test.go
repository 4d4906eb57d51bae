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

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/doctext/doctexttest"
	"github.com/botd-dev/botd/internal/testwait"
)

// docModel asks for the document a question names ("what does
// report.pdf say?") and answers with the marker words it finds in the
// <document> text that came back.
type docModel struct {
	wire *fakeModel
	srv  *httptest.Server

	mu   sync.Mutex
	reqs []string
}

var (
	markerRe   = regexp.MustCompile(`MARKER-[A-Z]+-\d+`)
	docNamedRe = regexp.MustCompile(`what does (\S+) say`)
)

func newDocModel(t *testing.T) *docModel {
	m := &docModel{wire: &fakeModel{t: t, wire: "openai"}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *docModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.reqs = append(m.reqs, string(body))
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	if req := readChat(body); req.LastRole == "tool" {
		text := req.LastText
		if !strings.Contains(text, "<document ") {
			m.wire.text(w, "No document text came back.")
			return
		}
		m.wire.text(w, "Found: "+strings.Join(markerRe.FindAllString(text, -1), " "))
		return
	}
	asked := newText(body)
	name := docNamedRe.FindStringSubmatch(asked)
	if name == nil {
		m.wire.text(w, "Hello.")
		return
	}
	// The documents were posted before earlier questions: their messages
	// are marked answered, but their placeholders are there to use.
	ref := regexp.MustCompile(`\[Document: ` + regexp.QuoteMeta(name[1]) + `[^\]]*ref:(tg_[0-9A-Za-z]+)\]`).FindStringSubmatch(string(body))
	if ref == nil {
		m.wire.text(w, "No such document.")
		return
	}
	m.wire.toolCall(w, "fetch_media", fmt.Sprintf(`{"mediaRef":%q}`, ref[1]))
}

// A PDF over 1 MiB, a DOCX and an XLSX, each asked about, reach the model
// as text; none of their text is in the prompt before the agent fetched it.
func TestDocumentsReachTheModelAsText(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	model := newDocModel(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(continuityConfig, telegramtest.Token, tg.URL(), model.srv.URL))

	var pages []doctexttest.Page
	for p := 1; p <= 120; p++ {
		var lines []string
		for l := 0; l < 30; l++ {
			lines = append(lines, fmt.Sprintf("Page %d line %d of the annual report, with enough words to fill the line nicely %s", p, l, strings.Repeat("ipsum ", 35)))
		}
		if p == 1 {
			lines[3] = "The summary says MARKER-PDF-1 for the board."
		}
		pages = append(pages, doctexttest.Page{Lines: lines})
	}
	pdf := doctexttest.PDF(pages, doctexttest.PDFOptions{})
	if len(pdf) <= 1<<20 {
		t.Fatalf("the PDF is only %d bytes; want over 1 MiB", len(pdf))
	}
	docx := doctexttest.DOCX(doctexttest.P("", "Meeting notes: MARKER-DOCX-2 was agreed."))
	xlsx := doctexttest.XLSX(doctexttest.Sheet{Name: "Budget", Rows: [][]string{{"item", "cost"}, {"MARKER-XLSX-3", "120"}}})
	docs := []struct {
		id, name, mime, marker string
		data                   []byte
	}{
		{"pdf1", "report.pdf", "application/pdf", "MARKER-PDF-1", pdf},
		{"docx1", "notes.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "MARKER-DOCX-2", docx},
		{"xlsx1", "budget.xlsx", "application/octet-stream", "MARKER-XLSX-3", xlsx}, // a sender that says nothing useful
	}
	for i, d := range docs {
		tg.AddFile(telegramtest.File{ID: d.id, Data: d.data})
		u := docUpdate(-100, 10+i, d.id, d.name, d.mime, int64(len(d.data)))
		tg.Enqueue(u)
	}
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	testwait.Within(t, 30*time.Second, "tg.Pending() == 0", func() bool { return tg.Pending() == 0 })

	group, ann := telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann")
	for i, d := range docs {
		before := len(model.snapshot())
		u := telegramtest.Text(group, ann, 20+i, "@Andy what does "+d.name+" say?")
		u.Message.Date = int(time.Now().Unix())
		tg.Enqueue(u)
		want := "Found: " + d.marker
		testwait.Within(t, 60*time.Second, "an answer about the document", func() bool {
			for _, s := range tg.Sent() {
				if strings.Contains(s.String(), want) || strings.Contains(s.String(), "No document text") || strings.Contains(s.String(), "No such") {
					return true
				}
			}
			return false
		})
		reqs := model.snapshot()[before:]
		if len(reqs) != 2 {
			t.Fatalf("%s: %d model requests, want 2 (question, then the document's text)", d.name, len(reqs))
		}
		if strings.Contains(reqs[0], d.marker) {
			t.Errorf("%s: its text was in the prompt before the agent fetched it", d.name)
		}
		found := false
		for _, s := range tg.Sent() {
			found = found || strings.Contains(s.String(), want)
		}
		if !found {
			t.Errorf("%s did not reach the model as text; chat: %v", d.name, tg.Sent())
		}
	}
	host.stop(t)
}

func (m *docModel) snapshot() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.reqs...)
}
