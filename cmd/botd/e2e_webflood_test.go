package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
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
	"github.com/botd-dev/botd/internal/testwait"
)

// The open-file limit botd runs under in the flood test, like the
// issue's machine; its web channel caps connections at 512 by default.
const floodNoFile = 1024

const floodConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
  web: {enabled: true, listen: "127.0.0.1:0"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: main, name: Main, chat: "web:main", main: true}
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

// startLimited starts botd run under prlimit's open-file limit, with its
// stdout (the web address) handed out line by line.
func startLimited(t *testing.T, dir string, nofile int) *webProc {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	lim := fmt.Sprintf("--nofile=%d:%d", nofile, nofile)
	cmd := exec.Command(prlimit, lim, "--", botdBin, "run", "--config", "botd.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BOTD_CONFIG=")
	return startWebCmd(t, cmd)
}

// openFiles counts a process's open descriptors.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("cannot count botd's open files: %v", err)
	}
	return len(fds)
}

// 1100 idle connections to the web room (half got their redirect to the
// login, half sent nothing) leave botd with open files to spare: Telegram
// is answered and an MCP client's fetch through IPC is served.
func TestWebFloodLeavesTelegramAndIPC(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a real botd")
	}
	dir := t.TempDir()
	tg := telegramtest.New(t)
	model := newFakeModel(t, "openai", "Heard you through the flood.")
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(floodConfig, tgToken, tg.URL(), model.srv.URL))
	doc := make([]byte, 50_000)
	rand.Read(doc)
	tg.AddFile(telegramtest.File{ID: "flooddoc", Data: doc})
	tg.Enqueue(docUpdate(-100, 5, "flooddoc", "report.bin", "application/octet-stream", int64(len(doc))))

	p := startLimited(t, dir, floodNoFile)
	base, _ := p.urlLine(t)
	p.waitLog(t, "botd running")
	pid := p.cmd.Process.Pid // prlimit execs botd: the same process
	limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if !regexp.MustCompile(`Max open files\s+` + strconv.Itoa(floodNoFile) + `\s`).Match(limits) {
		t.Fatalf("botd does not run under the open-file limit:\n%s", limits)
	}
	host := strings.TrimPrefix(base, "http://")

	const flood = 1100
	conns := make([]net.Conn, 0, flood)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range flood {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 {
			// A keep-alive request for the room: answered with the redirect
			// to the login, which closes the connection.
			fmt.Fprintf(c, "GET /r/main HTTP/1.1\r\nHost: %s\r\nConnection: keep-alive\r\n\r\n", host)
		}
	}
	// Every redirect said Connection: close.
	for i := 0; i < flood; i += 2 {
		c := conns[i]
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			// Closed for the cap before it was answered: as good.
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !resp.Close {
			t.Fatalf("connection %d: %d, close %t; want a redirect that closes the connection", i, resp.StatusCode, resp.Close)
		}
	}
	if n := openFiles(t, pid); n > floodNoFile-200 {
		t.Errorf("botd holds %d open files under the flood, limit %d", n, floodNoFile)
	}
	t.Logf("botd's open files with %d connections at it: %d", flood, openFiles(t, pid))

	// Telegram still reaches the agent and the answer goes out.
	tg.Enqueue(telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), 6, "@Andy are you there?"))
	testwait.Within(t, 90*time.Second, "the answer sent through the flood", func() bool {
		for _, s := range tg.Sent() {
			if strings.Contains(s.String(), "Heard you through the flood.") {
				return true
			}
		}
		return false
	})
	// An MCP client's fetch goes through IPC to the daemon.
	fam := mcpStdio(t, dir, "botd.yaml", "family")
	ref := refNamed(t, refsByName(t, fam, 1), "report.bin")
	if res := callTool(t, fam, "fetch_media", map[string]any{"mediaRef": ref}); res.IsError {
		t.Fatalf("fetch during the flood: %s", resultText(res))
	}
	if n := openFiles(t, pid); n > floodNoFile-200 {
		t.Errorf("botd holds %d open files after the work, limit %d", n, floodNoFile)
	}
	if strings.Contains(p.Logs(), "too many open files") {
		t.Errorf("botd ran out of open files:\n%s", p.Logs())
	}
}

const guestConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
media:
  max_download_bytes: 200000
  inline_max_bytes: 100000
  max_disk_bytes: 400000
  group_share: 350000
  sweep_interval: 1h
channels:
  web: {enabled: true, listen: "127.0.0.1:0"}
llm:
  providers:
    local: {type: openai, base_url: "http://127.0.0.1:9/v1"}
  model: {provider: local, name: test-model}
groups:
  - {folder: main, name: Main, chat: "web:main", main: true}
  - {folder: guests, name: Guests, chat: "web:guests", requires_trigger: true}
`

var joinLink = regexp.MustCompile(`/join#link=([A-Za-z0-9_-]+)`)

// upload posts one file to a room as the page's script does and returns
// the status and body.
func (s *webSession) upload(room, name string, data []byte) (int, string) {
	s.t.Helper()
	return s.uploadWith(s.csrf(room), room, name, data)
}

// csrf is the room page's CSRF token.
func (s *webSession) csrf(room string) string {
	s.t.Helper()
	m := pageCSRF.FindStringSubmatch(s.get("/r/" + room))
	if m == nil {
		s.t.Fatal("room page without a CSRF token")
	}
	return m[1]
}

// uploadWith posts a file with a token read before: safe from several
// goroutines (it never calls t.Fatal; a failed request is status 0).
func (s *webSession) uploadWith(token, room, name string, data []byte) (int, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("name", "Ann")
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, s.base+"/r/"+room+"/messages", &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-CSRF-Token", token)
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var fileURL = regexp.MustCompile(`/r/main/files/[0-9a-f]{32}`)

// With the disk budget full, a room-link guest uploads until refused; the
// owner's upload in another room, the only copy, is never evicted for it.
func TestGuestCannotEvictTheOwnersUpload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), guestConfig)
	p := startBotdEnv(t, dir, minimalEnv(t.TempDir()), "run", "--config", "botd.yaml")
	base, token := p.urlLine(t)
	p.waitLog(t, "botd running")

	owner := webLogin(t, base, token)
	own := make([]byte, 150_000)
	rand.Read(own)
	if st, body := owner.upload("main", "owners.bin", own); st != http.StatusOK {
		t.Fatalf("owner upload: %d %s", st, body)
	}
	where := fileURL.FindString(owner.get("/r/main"))
	if where == "" {
		t.Fatal("the room page shows no file")
	}

	// A room link for the guests' room, and a guest through it.
	guest := joinAsGuest(t, owner, base, "guests")

	// 100 kB at a time against a 350 kB share: the fourth is refused; the
	// owner's 150 kB and the guest's 300 kB are past the 400 kB budget.
	refused := ""
	for i := range 10 {
		data := make([]byte, 100_000)
		rand.Read(data)
		st, body := guest.upload("guests", fmt.Sprintf("g%d.bin", i), data)
		if st == http.StatusInsufficientStorage {
			refused = body
			break
		}
		if st != http.StatusOK {
			t.Fatalf("guest upload %d: %d %s", i, st, body)
		}
	}
	if !strings.Contains(refused, "this room has used its share of botd's disk (342KB); ask the admin to free space") {
		t.Fatalf("the guest was not refused with the share sentence: %q", refused)
	}
	// The sweeper, woken by the uploads, found the budget over and
	// nothing it may evict for the guest.
	p.waitLog(t, "still over budget")
	got := owner.getBytes(where)
	if !bytes.Equal(got, own) {
		t.Fatalf("the owner's upload changed or is gone (%d bytes, want %d)", len(got), len(own))
	}
	p.stop(t)
}

// joinAsGuest has the owner make a link to room on the dashboard and
// returns a guest logged in through it.
func joinAsGuest(t *testing.T, owner *webSession, base, room string) *webSession {
	t.Helper()
	m := formCSRF.FindStringSubmatch(owner.get("/admin"))
	resp, err := owner.c.PostForm(base+"/admin/links", url.Values{"csrf": {m[1]}, "room": {room}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	link := joinLink.FindStringSubmatch(owner.get("/admin"))
	if link == nil {
		t.Fatal("the dashboard shows no room link")
	}
	jar, _ := cookiejar.New(nil)
	guest := &webSession{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	jm := formCSRF.FindStringSubmatch(guest.get("/join"))
	if resp, err = guest.c.PostForm(base+"/join", url.Values{"csrf": {jm[1]}, "link": {link[1]}}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/r/"+room {
		t.Fatalf("join ended at %s", resp.Request.URL)
	}
	return guest
}

func (s *webSession) getBytes(path string) []byte {
	s.t.Helper()
	resp, err := s.c.Get(s.base + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
	}
	return b
}

const uploadsConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: info
channels:
  web: {enabled: true, listen: "127.0.0.1:0"}
llm:
  providers:
    local: {type: openai, base_url: "http://127.0.0.1:9/v1"}
  model: {provider: local, name: test-model}
groups:
  - {folder: main, name: Main, chat: "web:main", main: true}
`

// The heaviest thing a stranger with a room link can send the web channel:
// uploads at the size cap. Four at once must leave botd run (built
// without the race detector) under the 300 MB every path is held to:
// uploads stream to disk, never into memory.
func TestWebUploadsPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("four uploads of 95 MB")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), uploadsConfig)
	cmd := exec.Command(plainBotd(t), "run", "--config", "botd.yaml")
	cmd.Dir = dir
	cmd.Env = minimalEnv(t.TempDir())
	p := startWebCmd(t, cmd)
	base, token := p.urlLine(t)
	p.waitLog(t, "botd running")
	s := webLogin(t, base, token)
	base0 := vmHWM(t, p.cmd.Process.Pid)

	data := bytes.Repeat([]byte("botd upload "), 95<<20/12)
	// The page (and its token) first: the four uploads are what runs at once.
	csrf := s.csrf("main")
	var wg sync.WaitGroup
	status, bodies := make([]int, 4), make([]string, 4)
	for i := range status {
		wg.Go(func() { status[i], bodies[i] = s.uploadWith(csrf, "main", fmt.Sprintf("big%d.bin", i), data) })
	}
	wg.Wait()
	for i, st := range status {
		if st != http.StatusOK {
			t.Errorf("upload %d: status %d %s", i, st, bodies[i])
		}
	}
	peak := vmHWM(t, p.cmd.Process.Pid)
	t.Logf("botd run peak RSS: %d MB after four %d MB uploads at once (%d MB before)", peak>>10, len(data)>>20, base0>>10)
	if peak > peakLimitKB {
		t.Errorf("botd run peaked at %d MB, over %d MB", peak>>10, peakLimitKB>>10)
	}
}
