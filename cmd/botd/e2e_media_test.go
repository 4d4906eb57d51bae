package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/jpeg"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

const tgToken = telegramtest.Token

// stallProxy sits in front of the fake Bot API and can hold file
// downloads, so a test can kill botd in the middle of one.
type stallProxy struct {
	srv    *httptest.Server
	mu     sync.Mutex
	stall  string // file path fragment to hold
	method string // Bot API method to hold
	gate   chan struct{}
	holds  int
	hits   map[string]int // file path → downloads
	served int64
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &stallProxy{hits: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		stall, method, gate := p.stall, p.method, p.gate
		if strings.HasPrefix(r.URL.Path, "/file/") {
			p.hits[r.URL.Path]++
		}
		p.mu.Unlock()
		if method != "" && strings.HasSuffix(r.URL.Path, "/"+method) {
			// Hold the call and never forward it: the network never saw it.
			p.mu.Lock()
			p.holds++
			p.mu.Unlock()
			select {
			case <-gate:
			case <-r.Context().Done():
			}
			return
		}
		if stall != "" && strings.HasPrefix(r.URL.Path, "/file/") && strings.Contains(r.URL.Path, stall) {
			// Send half the body, then hold.
			w.Header().Set("Content-Length", "1000000")
			w.WriteHeader(200)
			w.Write(bytes.Repeat([]byte{0xFF}, 400000))
			w.(http.Flusher).Flush()
			select {
			case <-gate:
			case <-r.Context().Done():
			}
			return
		}
		cw := &countingWriter{ResponseWriter: w}
		rp.ServeHTTP(cw, r)
		if strings.HasPrefix(r.URL.Path, "/file/") {
			p.mu.Lock()
			p.served += cw.n
			p.mu.Unlock()
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *stallProxy) hold(fragment string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall, p.gate = fragment, make(chan struct{})
}

func (p *stallProxy) holdMethod(method string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.method, p.gate = method, make(chan struct{})
}

func (p *stallProxy) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holds
}

func (p *stallProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
	}
	p.stall, p.method, p.gate = "", "", nil
}

// fileHits counts downloads of file paths containing fragment.
func (p *stallProxy) fileHits(fragment string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for path, c := range p.hits {
		if strings.Contains(path, fragment) {
			n += c
		}
	}
	return n
}

func (p *stallProxy) bytesServed() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

const mediaConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
media:
  inline_max_bytes: 1048576
  max_download_bytes: 104857600
channels:
  telegram:
    enabled: true
    token: "%s"
    api_url: "%s"
llm:
  providers:
    local: {type: openai, base_url: "http://127.0.0.1:9/v1"}
  model: {provider: local, name: test-model}
mcp:
  http:
    tokens:
      - {token: family-token-0123456789, group: family}
      - {token: work-token-0123456789ab, group: work}
groups:
  - {folder: family, name: Family, chat: "telegram:-100"}
  - {folder: work, name: Work, chat: "telegram:-200"}
`

func photoUpdate(chatID int64, msgID int, fileID string, size int, caption string) models.Update {
	chat := telegramtest.Group(chatID, "Group")
	from := telegramtest.Person(42, "Ann")
	return models.Update{Message: &models.Message{ID: msgID, Chat: chat, From: &from, Date: int(time.Now().Unix()), Caption: caption,
		Photo: []models.PhotoSize{{FileID: fileID + "-small", Width: 90, Height: 90, FileSize: 100}, {FileID: fileID, FileUniqueID: fileID + "u", Width: 800, Height: 600, FileSize: size}}}}
}

func docUpdate(chatID int64, msgID int, fileID, name, mime string, size int64) models.Update {
	chat := telegramtest.Group(chatID, "Group")
	from := telegramtest.Person(42, "Ann")
	return models.Update{Message: &models.Message{ID: msgID, Chat: chat, From: &from, Date: int(time.Now().Unix()),
		Document: &models.Document{FileID: fileID, FileUniqueID: fileID + "u", FileName: name, MimeType: mime, FileSize: size}}}
}

var refRe = regexp.MustCompile(`ref:((?:tg|wb)_[0-9A-Za-z]+)`)

// refsIn waits until list_media shows n refs and returns them by name.
func refsByName(t *testing.T, c *client.Client, n int) map[string]string {
	t.Helper()
	var text string
	var out map[string]string
	if !testwait.Eventually(func() bool {
		text = resultText(callTool(t, c, "list_media", map[string]any{"limit": 50}))
		out = map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
			if m := refRe.FindStringSubmatch(l); m != nil {
				out[l] = m[1]
			}
		}
		return len(out) >= n
	}) {
		t.Fatalf("list_media shows %d refs, want %d:\n%s", len(out), n, text)
	}
	return out
}

func refNamed(t *testing.T, refs map[string]string, fragment string) string {
	t.Helper()
	for line, id := range refs {
		if strings.Contains(line, fragment) {
			return id
		}
	}
	t.Fatalf("no ref whose listing mentions %q in %v", fragment, refs)
	return ""
}

func TestMediaServerEndToEnd(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	proxy := newStallProxy(t, tg.URL())
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mediaConfig, tgToken, proxy.srv.URL))

	small := pngOf(t, 60, 40)
	big := noisyJPEG(t, 2000, 1300)
	if len(big) < 5_000_000 {
		t.Fatalf("big image is only %d bytes", len(big))
	}
	pdf := []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	tg.AddFile(telegramtest.File{ID: "small-photo", Data: small})
	tg.AddFile(telegramtest.File{ID: "big-photo", Data: big})
	tg.AddFile(telegramtest.File{ID: "report", Data: pdf})
	tg.AddFile(telegramtest.File{ID: "work-photo", Data: small})
	tg.AddFile(telegramtest.File{ID: "crash-photo", Data: small})
	tg.Enqueue(
		photoUpdate(-100, 1, "small-photo", len(small), "tiny sunset"),
		photoUpdate(-100, 2, "big-photo", len(big), "huge"),
		docUpdate(-100, 3, "report", "report.pdf", "application/pdf", int64(len(pdf))),
		docUpdate(-100, 4, "movie", "movie.mkv", "video/x-matroska", 1<<30),
		photoUpdate(-100, 5, "crash-photo", 1000000, "crash"),
		photoUpdate(-200, 6, "work-photo", len(small), "work stuff"),
	)

	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	c := mcpStdio(t, dir, "botd.yaml", "family")

	// Tools: all four, each described, each with a schema.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		if tool.Description == "" || tool.InputSchema.Type != "object" {
			t.Errorf("tool %s lacks a description or schema", tool.Name)
		}
	}
	for _, want := range []string{"list_media", "fetch_media", "send_message", "send_media"} {
		if !names[want] {
			t.Errorf("tool %s missing", want)
		}
	}

	refs := refsByName(t, c, 5)
	if n := tg.Downloads(); n != 0 || tg.GetFileCalls() != 0 {
		t.Fatalf("before any fetch: downloads=%d getFile=%d, want 0", n, tg.GetFileCalls())
	}
	for line := range refs {
		if strings.Contains(line, "work stuff") {
			t.Errorf("family sees work's media: %s", line)
		}
	}

	// Small image: inline image content equal to the source, downloaded once for two fetches.
	smallRef := refNamed(t, refs, "tiny sunset")
	for i := 0; i < 2; i++ {
		res := callTool(t, c, "fetch_media", map[string]any{"mediaRef": smallRef})
		if res.IsError {
			t.Fatalf("fetch small: %s", resultText(res))
		}
		var img *mcpgo.ImageContent
		for _, ct := range res.Content {
			if ic, ok := mcpgo.AsImageContent(ct); ok {
				img = ic
			}
		}
		if img == nil {
			t.Fatalf("no image content: %s", resultText(res))
		}
		got, _ := base64.StdEncoding.DecodeString(img.Data)
		if !bytes.Equal(got, small) || img.MIMEType != "image/png" {
			t.Fatalf("inline image differs from the source (mime %s)", img.MIMEType)
		}
	}
	if n := tg.Downloads(); n != 1 {
		t.Errorf("downloads after two fetches of one photo = %d, want 1", n)
	}

	// Big image: a preview plus a path whose file equals the source.
	res := callTool(t, c, "fetch_media", map[string]any{"mediaRef": refNamed(t, refs, "huge")})
	if res.IsError {
		t.Fatalf("fetch big: %s", resultText(res))
	}
	var preview *mcpgo.ImageContent
	for _, ct := range res.Content {
		if ic, ok := mcpgo.AsImageContent(ct); ok {
			preview = ic
		}
	}
	if preview == nil {
		t.Fatal("no preview for a large image")
	}
	pb, _ := base64.StdEncoding.DecodeString(preview.Data)
	cfgImg, _, err := image.DecodeConfig(bytes.NewReader(pb))
	if err != nil || max(cfgImg.Width, cfgImg.Height) > 1568 || len(pb) > 1<<20 {
		t.Errorf("preview %dx%d, %d bytes, err %v", cfgImg.Width, cfgImg.Height, len(pb), err)
	}
	bigPath := savedPath(t, dir, resultText(res))
	if got, _ := os.ReadFile(bigPath); !bytes.Equal(got, big) {
		t.Error("saved big image differs from the source")
	}

	// PDF: a path (and the file is the PDF).
	res = callTool(t, c, "fetch_media", map[string]any{"mediaRef": refNamed(t, refs, "report.pdf")})
	if res.IsError {
		t.Fatalf("fetch pdf: %s", resultText(res))
	}
	if got, _ := os.ReadFile(savedPath(t, dir, resultText(res))); !bytes.Equal(got, pdf) {
		t.Error("saved PDF differs from the source")
	}

	// Refusals: clear tool errors, no downloads.
	downloads, getFiles := tg.Downloads(), tg.GetFileCalls()
	workRefs := refsByName(t, mcpStdio(t, dir, "botd.yaml", "work"), 1)
	refusals := []struct {
		name, ref, want string
	}{
		{"unknown ref", "tg_NoSuchRef0000", "not_found"},
		{"another group's ref", refNamed(t, workRefs, "work stuff"), "not_found"},
		{"1 GB over the cap", refNamed(t, refs, "movie.mkv"), "too_large"},
	}
	for _, r := range refusals {
		res := callTool(t, c, "fetch_media", map[string]any{"mediaRef": r.ref})
		if !res.IsError || !strings.Contains(resultText(res), r.want) {
			t.Errorf("%s: error=%v text=%q, want a tool error with %s", r.name, res.IsError, resultText(res), r.want)
		}
	}
	if tg.Downloads() != downloads || tg.GetFileCalls() != getFiles {
		t.Errorf("refused fetches reached Telegram: downloads %d→%d getFile %d→%d", downloads, tg.Downloads(), getFiles, tg.GetFileCalls())
	}

	// A malformed request file is quarantined with its reason.
	reqDir := filepath.Join(dir, "data", "ipc", "family", "requests")
	os.WriteFile(filepath.Join(reqDir, "broken.json"), []byte("{not json"), 0o644)
	reason := filepath.Join(dir, "data", "ipc", "family", "failed", "broken.json.reason")
	waitForFile(t, reason, 15*time.Second)

	// Crash safety: kill the host in the middle of a download; after a
	// restart the cache holds no partial file and the fetch succeeds.
	proxy.hold("crash-photo")
	crashRef := refNamed(t, refs, "crash")
	errc := make(chan *mcpgo.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "fetch_media"
		req.Params.Arguments = map[string]any{"mediaRef": crashRef}
		r, err := c.CallTool(ctx, req)
		if err != nil {
			r = mcpgo.NewToolResultError(err.Error())
		}
		errc <- r
	}()
	tmpDir := filepath.Join(dir, "data", "media", "tmp")
	testwait.Within(t, 20*time.Second, "a file in the cache temp folder", func() bool { e, _ := os.ReadDir(tmpDir); return len(e) > 0 })
	host.kill()
	if e, _ := os.ReadDir(tmpDir); len(e) == 0 {
		t.Fatal("expected the killed download to leave a partial temp file")
	}
	proxy.release()
	host2 := startBotd(t, dir, "run", "--config", "botd.yaml")
	host2.waitLog(t, "botd running")
	got := <-errc
	if got.IsError {
		t.Fatalf("fetch across a host restart failed: %s", resultText(got))
	}
	if e, _ := os.ReadDir(tmpDir); len(e) != 0 {
		t.Errorf("partial files after restart: %v", e)
	}
	if got, _ := os.ReadFile(savedPath(t, dir, resultText(got))); !bytes.Equal(got, small) {
		t.Error("file fetched after the restart differs from the source")
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "data", "media"))
	for _, e := range entries {
		if e.Name() == "tmp" {
			continue
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "data", "media", e.Name())); len(b) == 400000 {
			t.Errorf("cache holds the partial download %s", e.Name())
		}
	}

	// Secrets never reach ipc/ or groups/.
	for _, root := range []string{filepath.Join(dir, "data", "ipc"), filepath.Join(dir, "groups")} {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(tgToken)) || bytes.Contains(b, []byte("small-photo")) {
					t.Errorf("%s holds a channel secret", p)
				}
			}
			return nil
		})
	}
	if strings.Contains(host.Logs()+host2.Logs(), tgToken) {
		t.Error("the bot token appears in botd's logs")
	}
	host2.stop(t)
}

var pathRe = regexp.MustCompile(`(/[^\s"']+/groups/[^\s"']+)`)

// savedPath finds the absolute saved path in a fetch_media text.
func savedPath(t *testing.T, dir, text string) string {
	t.Helper()
	m := pathRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no saved path in %q", text)
	}
	p := strings.TrimRight(m[1], ").,")
	if !strings.HasPrefix(p, dir) {
		t.Fatalf("saved path %s is outside the test folder", p)
	}
	return p
}

func waitForFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	testwait.Within(t, d, path, func() bool { _, err := os.Stat(path); return err == nil })
}

func TestMCPHTTPTransport(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mediaConfig, tgToken, tg.URL()))
	tg.AddFile(telegramtest.File{ID: "fam", Data: pngOf(t, 5, 5)})
	tg.AddFile(telegramtest.File{ID: "wrk", Data: pngOf(t, 6, 6)})
	tg.Enqueue(photoUpdate(-100, 1, "fam", 100, "family pic"), photoUpdate(-200, 2, "wrk", 100, "work pic"))
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")

	addr := freeAddr(t)
	srv := startBotd(t, dir, "mcp", "--http", addr, "--config", "botd.yaml")
	srv.waitLog(t, "serving MCP")
	endpoint := "http://" + addr + "/mcp"

	// Missing and wrong tokens: 401.
	for _, auth := range []string{"", "Bearer nope-nope-nope-nope", "Bearer family-token-012345678"} {
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("auth %q: status %d, want 401", auth, resp.StatusCode)
		}
	}

	// A good token reaches its own group only.
	for _, tc := range []struct{ token, sees, hidden string }{
		{"family-token-0123456789", "family pic", "work pic"},
		{"work-token-0123456789ab", "work pic", "family pic"},
	} {
		c, err := client.NewStreamableHttpClient(endpoint, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tc.token}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		initMCP(t, c)
		refs := refsByName(t, c, 1)
		var all string
		for l := range refs {
			all += l
		}
		if !strings.Contains(all, tc.sees) || strings.Contains(all, tc.hidden) {
			t.Errorf("token %s sees %q", tc.token, all)
		}
		cancel()
		c.Close()
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// A token the Bot API rejects stops `botd run` at once with a message that
// names the setting to fix, and never prints the token.
func TestRunFailsOnARejectedTelegramToken(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	tg.SetUnauthorized(true)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mediaConfig, tgToken, tg.URL()))
	p := startBotd(t, dir, "run", "--config", "botd.yaml")
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatal("botd kept running with a rejected token")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	logs := p.Logs()
	if !strings.Contains(logs, "channels.telegram.token") || !strings.Contains(logs, "TELEGRAM_BOT_TOKEN") {
		t.Errorf("message does not name the setting:\n%s", logs)
	}
	if strings.Contains(logs, tgToken) {
		t.Error("the token was printed")
	}
}
