package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/doctext/doctexttest"
	"github.com/botd-dev/botd/internal/testwait"
)

// The red team's attacks on understanding, each against the real daemon
// built without the race detector (whose shadow memory would make any
// peak figure meaningless): hostile files are posted to a Telegram group,
// one question asks about all of them, and the fake model fetches them
// all in one turn. botd must answer, each file with a sentence, while
// neither botd run nor any child it starts passes 300 MB.

// peakLimitKB is the ceiling for botd run and every child.
const peakLimitKB = 300 << 10

var (
	plainOnce sync.Once
	plainBin  string
	plainErr  error
)

// plainBotd builds botd once without the race detector.
func plainBotd(t *testing.T) string {
	t.Helper()
	plainOnce.Do(func() {
		plainBin = filepath.Join(filepath.Dir(botdBin), "botd-plain")
		if out, err := exec.Command("go", "build", "-o", plainBin, ".").CombinedOutput(); err != nil {
			plainErr = fmt.Errorf("build botd: %v\n%s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainBin
}

// needTools fails (never skips: make testdeps installs them) without the
// converters an attack goes through.
func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("%s is not on PATH; `make testdeps` installs it (apt-get install -y ffmpeg poppler-utils)", n)
		}
	}
}

// fetchAllModel fetches every ref of the question's context in one turn,
// then answers "Read." once the results came back; it keeps the tool
// results it was handed.
type fetchAllModel struct {
	wire *fakeModel
	srv  *httptest.Server

	mu      sync.Mutex
	results []string // tool result texts, in order
}

var anyRefRe = regexp.MustCompile(`ref:(tg_[0-9A-Za-z]+)`)

func newFetchAllModel(t *testing.T) *fetchAllModel {
	m := &fetchAllModel{wire: &fakeModel{t: t, wire: "openai"}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *fetchAllModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	var tools []string
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			tools = append(tools, contentText(msg.Content))
		}
	}
	if len(tools) > 0 {
		m.mu.Lock()
		m.results = tools
		m.mu.Unlock()
		m.wire.text(w, "Read.")
		return
	}
	if !strings.Contains(newText(body), "read them all") {
		m.wire.text(w, "Hello.")
		return
	}
	seen := map[string]bool{}
	var calls [][2]string
	// The users' messages only: the system prompt shows an example ref.
	for _, ref := range anyRefRe.FindAllStringSubmatch(readChat(body).Users, -1) {
		if !seen[ref[1]] {
			seen[ref[1]] = true
			calls = append(calls, [2]string{"fetch_media", fmt.Sprintf(`{"mediaRef":%q}`, ref[1])})
		}
	}
	toolCalls(w, calls)
}

func (m *fetchAllModel) toolResults() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...)
}

// toolCalls streams one OpenAI turn that calls every tool of calls.
func toolCalls(w io.Writer, calls [][2]string) {
	for i, c := range calls {
		args, _ := json.Marshal(c[1])
		sse(w, "", fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}]}`, i, i, c[0], args))
	}
	sse(w, "", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	sse(w, "", `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`)
	sse(w, "", `[DONE]`)
}

const redteamConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
media:
  max_download_bytes: 104857600
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
agent:
  run_timeout: 1m
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

// hostileFile is one file of an attack and what its fetch must say.
type hostileFile struct {
	name, mime string
	data       []byte
	says       *regexp.Regexp // in the tool result the model got
}

// attack posts files to the group, asks about all of them at once and
// returns the tool results and botd's logs, having checked the peaks.
func attack(t *testing.T, files []hostileFile) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	tg := telegramtest.New(t)
	model := newFetchAllModel(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(redteamConfig, telegramtest.Token, tg.URL(), model.srv.URL))
	for i, f := range files {
		id := fmt.Sprintf("f%d", i)
		tg.AddFile(telegramtest.File{ID: id, Data: f.data})
		tg.Enqueue(docUpdate(-100, 10+i, id, f.name, f.mime, int64(len(f.data))))
	}
	p := startBin(t, plainBotd(t), dir, "run", "--config", "botd.yaml")
	p.waitLog(t, "botd running")
	testwait.Within(t, 60*time.Second, "tg.Pending() == 0", func() bool { return tg.Pending() == 0 })

	group, ann := telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann")
	q := telegramtest.Text(group, ann, 100, "@Andy read them all")
	q.Message.Date = int(time.Now().Unix())
	asked := time.Now()
	tg.Enqueue(q)
	// The run's own deadline is a minute; the guard only stops a hang.
	testwait.Within(t, 3*time.Minute, "an answer in chat -100", func() bool {
		for _, s := range tg.Sent() {
			if s.ChatID == -100 && s.Text != "" {
				return true
			}
		}
		return false
	})
	t.Logf("question → answer: %v", time.Since(asked).Round(time.Millisecond))
	var answer string
	for _, s := range tg.Sent() {
		if s.ChatID == -100 && s.Text != "" {
			answer = s.Text
		}
	}
	if answer != "Read." {
		t.Errorf("answer %q, want the model's %q (the run did not finish with the tool results)", answer, "Read.")
	}

	peak := vmHWM(t, p.cmd.Process.Pid)
	t.Logf("botd run peak RSS: %d MB", peak>>10)
	if peak > peakLimitKB {
		t.Errorf("botd run peaked at %d MB, over %d MB", peak>>10, peakLimitKB>>10)
	}
	logs := p.Logs()
	children := childPeaks(logs)
	if len(children) == 0 {
		t.Errorf("no boxed child was logged")
	}
	for _, c := range children {
		t.Logf("child %s: peak RSS %d MB, %s", c.name, c.kb>>10, c.outcome)
		if c.kb > peakLimitKB {
			t.Errorf("child %s peaked at %d MB, over %d MB", c.name, c.kb>>10, peakLimitKB>>10)
		}
	}

	results := model.toolResults()
	if len(results) != len(files) {
		t.Fatalf("%d tool results, want %d", len(results), len(files))
	}
	for _, f := range files {
		found := false
		for _, r := range results {
			found = found || (strings.Contains(r, f.name) && f.says.MatchString(r))
		}
		if !found {
			t.Errorf("%s: no tool result says %q; results:\n%s", f.name, f.says, strings.Join(results, "\n---\n"))
		}
	}
	return results, logs
}

// startBin is startBotd with another binary.
func startBin(t *testing.T, bin, dir string, args ...string) *proc {
	t.Helper()
	saved := botdBin
	botdBin = bin
	defer func() { botdBin = saved }()
	return startBotd(t, dir, args...)
}

// vmHWM is a live process's peak resident set in KiB.
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmHWM in /proc/%d/status", pid)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

type childPeak struct {
	name, outcome string
	kb            int
}

// boxLine is the box's log line for a finished child.
var boxLine = regexp.MustCompile(`msg="box: child done".*`)

func childPeaks(logs string) []childPeak {
	var out []childPeak
	attr := func(line, key string) string {
		m := regexp.MustCompile(`\b` + key + `=("[^"]*"|\S+)`).FindStringSubmatch(line)
		if m == nil {
			return ""
		}
		return strings.Trim(m[1], `"`)
	}
	for _, line := range boxLine.FindAllString(logs, -1) {
		b, _ := strconv.Atoi(attr(line, "max_rss"))
		outcome := attr(line, "err")
		if outcome == "" {
			outcome = "ok"
		}
		out = append(out, childPeak{name: attr(line, "job"), outcome: outcome, kb: b >> 10})
	}
	return out
}

var memorySentence = regexp.MustCompile(`(?i)more (memory|data)|too large|more than (botd|can be read)|botd decodes at most|cannot hold them`)

// Four copies of a 68 KB PDF whose xref stream decodes through eight
// Flate filters into 64 MiB predictor rows (4.9 GB of botd run before),
// and a 4 Mi-entry xref stream (0.5 GB), asked about in one question.
func TestRedTeamPDFBombs(t *testing.T) {
	bomb := doctexttest.FlateBombPDF()
	xref := doctexttest.HugeXrefPDF()
	t.Logf("bomb %d KB, xref %d KB", len(bomb)>>10, len(xref)>>10)
	var files []hostileFile
	for i := 1; i <= 4; i++ {
		files = append(files, hostileFile{fmt.Sprintf("bomb%d.pdf", i), "application/pdf", bomb, memorySentence})
	}
	files = append(files, hostileFile{"xref.pdf", "application/pdf", xref, memorySentence})
	attack(t, files)
}

// 2000 pages over nine 64 MiB object streams, which thrashed an 8-stream
// cache for 150 s of CPU: answered inside the run's minute.
func TestRedTeamPDFThrash(t *testing.T) {
	thrash := doctexttest.ObjStreamThrashPDF(2000)
	t.Logf("thrash PDF %d KB", len(thrash)>>10)
	attack(t, []hostileFile{{"pages.pdf", "application/pdf", thrash,
		regexp.MustCompile(`(?i)more (memory|data)|too large|more than botd|took too long|time`)}})
}

// One DOCX of 48 KB holding one 47 MiB text run (211 MB before).
func TestRedTeamDOCXRun(t *testing.T) {
	docx := doctexttest.HugeRunDOCX()
	attack(t, []hostileFile{{"run.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", docx,
		regexp.MustCompile(`<document |(?i)more than botd|too large`)}})
}

// A video of four 16000² progressive JPEG frames (each ffmpeg call took
// 2.33 GB, four at once) and a scanned PDF of one such image (pdftoppm
// 1.53 GB): the converters run in the box and say they need more memory.
func TestRedTeamConverters(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe", "pdftoppm")
	frame := progressiveGrayJPEG(16000, 16000)
	video := mjpegVideo(t, frame, 4)
	scan := scannedPDF(frame, 16000, 16000)
	t.Logf("frame %d KB, video %d KB, scanned PDF %d KB", len(frame)>>10, len(video)>>10, len(scan)>>10)
	attack(t, []hostileFile{
		{"clip.avi", "video/x-msvideo", video, regexp.MustCompile(`(?i)more memory|no frames`)},
		{"scan.pdf", "application/pdf", scan, regexp.MustCompile(`(?i)more memory|cannot be shown|as images`)},
	})
}

// progressiveGrayJPEG is a w×h progressive grey JPEG holding only its DC
// scan: a megabyte that a decoder must hold as w·h·2 bytes of coefficients
// (512 MB at 16000²). Written by hand: every block's DC difference is 0,
// two zero bits each with the standard luminance DC table.
func progressiveGrayJPEG(w, h int) []byte {
	var b bytes.Buffer
	seg := func(marker byte, body []byte) {
		b.Write([]byte{0xFF, marker})
		binary.Write(&b, binary.BigEndian, uint16(len(body)+2))
		b.Write(body)
	}
	b.Write([]byte{0xFF, 0xD8})
	seg(0xDB, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...))
	seg(0xC2, []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 1, 1, 0x11, 0})
	dc := []byte{0x00, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0}
	seg(0xC4, append(dc, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11))
	seg(0xDA, []byte{1, 1, 0x00, 0, 0, 0x00})
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	b.Write(make([]byte, (blocks*2+7)/8))
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// mjpegVideo muxes n copies of frame into an AVI without decoding them.
func mjpegVideo(t *testing.T, frame []byte, n int) []byte {
	t.Helper()
	dir := t.TempDir()
	for i := 1; i <= n; i++ {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%d.jpg", i)), string(frame))
	}
	out := filepath.Join(dir, "clip.avi")
	cmd := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-framerate", "1", "-i", filepath.Join(dir, "f%d.jpg"), "-c", "copy", "-y", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mux the video: %v: %s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scannedPDF is a one-page PDF that draws one DCT image and has no text.
func scannedPDF(jpeg []byte, w, h int) []byte {
	var b bytes.Buffer
	var offs []int
	obj := func(body string, stream []byte) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s", len(offs), body)
		if stream != nil {
			b.WriteString("\nstream\n")
			b.Write(stream)
			b.WriteString("\nendstream")
		}
		b.WriteString("\nendobj\n")
	}
	b.WriteString("%PDF-1.4\n")
	content := []byte("q 612 0 0 792 0 0 cm /Im1 Do Q")
	obj("<< /Type /Catalog /Pages 2 0 R >>", nil)
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>", nil)
	obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 5 0 R >> >> /Contents 4 0 R >>", nil)
	obj(fmt.Sprintf("<< /Length %d >>", len(content)), content)
	obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>", w, h, len(jpeg)), jpeg)
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}

// The readers this round added, at their worst: a "PDF" of 19 MB of
// object headers and no catalog, which only the xref rebuild scans; a
// DOCX embedding four DOCX that each embed four DOCX with a 15 MiB text
// run (240 MiB of text two levels down, in 70 KB); and a presentation of
// 100,000 nested lists.
func TestRedTeamNewReaders(t *testing.T) {
	headers := objectHeadersPDF(19 << 20)
	run := doctexttest.RunDOCX(15 << 20)
	middle := doctexttest.EmbeddingDOCX(run, run, run, run)
	nested := doctexttest.EmbeddingDOCX(middle, middle, middle, middle)
	lists := doctexttest.ODF("application/vnd.oasis.opendocument.presentation", "",
		`<office:presentation><draw:page draw:name="deep"><draw:frame><draw:text-box>`+
			strings.Repeat("<text:list><text:list-item>", 100000)+"<text:p>deep</text:p>"+
			strings.Repeat("</text:list-item></text:list>", 100000)+
			`</draw:text-box></draw:frame></draw:page></office:presentation>`, "")
	t.Logf("headers PDF %d MB, nested DOCX %d KB, lists ODP %d KB", len(headers)>>20, len(nested)>>10, len(lists)>>10)
	attack(t, []hostileFile{
		{"headers.pdf", "application/pdf", headers, regexp.MustCompile(`(?i)damaged|could not|cannot`)},
		{"nested.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", nested,
			regexp.MustCompile(`<document |(?i)more than botd|too large`)},
		{"lists.odp", "application/vnd.oasis.opendocument.presentation", lists, regexp.MustCompile(`<document |(?i)too deep|nest`)},
	})
}

// Four of the object-header PDFs asked about at once, the costliest of
// these readers (a rebuild holds every header it finds): the children
// share the parse pool, so neither botd run's peak nor a child's grows
// with their number.
func TestRedTeamRebuildFourAtOnce(t *testing.T) {
	headers := objectHeadersPDF(19 << 20)
	var files []hostileFile
	for i := 1; i <= 4; i++ {
		files = append(files, hostileFile{fmt.Sprintf("headers%d.pdf", i), "application/pdf", headers,
			regexp.MustCompile(`(?i)damaged|could not|cannot`)})
	}
	attack(t, files)
}

// objectHeadersPDF is size bytes of "N 0 obj" lines after a PDF header:
// no catalog, no xref, so only the rebuild scan reads it.
func objectHeadersPDF(size int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	for i := 1; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%d 0 obj\n", i)
	}
	return b.Bytes()
}
