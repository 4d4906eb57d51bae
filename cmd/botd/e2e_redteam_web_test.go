package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const webOnlyConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
channels:
  web: {enabled: true, listen: "127.0.0.1:0"}
groups:
  - {folder: main, name: Main, chat: "web:main", main: true}
`

// The web channel's access control under its most hostile inputs, on the
// real daemon without the race detector: a sessions file of an older botd
// padded to the 2 MB import limit (a local process that can write the
// data folder), then strangers sending the largest cookies the server
// reads (forged: each is decoded and its signature checked) while guests
// holding a room link log in over and over (each login a session row, and
// past 1000 live sessions the oldest ended) — one such stranger, then four
// at once. botd run's peak stays bounded.
func TestRedTeamWebAuth(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), webOnlyConfig)
	wdir := filepath.Join(dir, "data", "web")
	if err := os.MkdirAll(wdir, 0o700); err != nil {
		t.Fatal(err)
	}
	var pad bytes.Buffer
	pad.WriteString("{")
	exp := time.Now().Add(24 * time.Hour).Unix()
	for i := 0; pad.Len() < 2<<20-200; i++ {
		if i > 0 {
			pad.WriteString(",")
		}
		fmt.Fprintf(&pad, `"pad%012d":{"r":"admin","exp":%d,"iat":%d}`, i, exp, i)
	}
	pad.WriteString("}")
	if err := os.WriteFile(filepath.Join(wdir, "sessions.json"), pad.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(plainBotd(t), "run", "--config", "botd.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BOTD_CONFIG=")
	p := startWebCmd(t, cmd)
	base, token := p.urlLine(t)
	p.waitLog(t, "web sessions moved into the database")
	afterImport := vmHWM(t, p.cmd.Process.Pid)

	admin := webLogin(t, base, token)
	m := formCSRF.FindStringSubmatch(admin.get("/admin"))
	if m == nil {
		t.Fatal("no form on the dashboard")
	}
	resp, err := admin.c.PostForm(base+"/admin/links", url.Values{"csrf": {m[1]}, "room": {"main"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	lm := joinLink.FindStringSubmatch(admin.get("/admin"))
	if lm == nil {
		t.Fatal("no room link on the dashboard")
	}
	link := lm[1]

	// A forged cookie as large as the server reads a header (64 KB):
	// well-formed, so its payload is decoded before the signature fails.
	forged := &http.Cookie{Name: "botd_session",
		Value: base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte("x"), 44<<10)) + "." + strings.Repeat("A", 43)}
	stranger := func(rounds int) error {
		for range rounds {
			jar, _ := cookiejar.New(nil)
			c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
			req, _ := http.NewRequest(http.MethodGet, base+"/r/main", nil)
			req.AddCookie(forged)
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.Request.URL.Path != "/login" {
				return fmt.Errorf("a forged cookie reached %s", resp.Request.URL)
			}
			// Log in as a guest through the link: a new session row.
			resp, err = c.Get(base + "/join")
			if err != nil {
				return err
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			f := formCSRF.FindSubmatch(page)
			if f == nil {
				return fmt.Errorf("no form on the join page")
			}
			resp, err = c.PostForm(base+"/join", url.Values{"csrf": {string(f[1])}, "link": {link}})
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.Request.URL.Path != "/r/main" {
				return fmt.Errorf("the join ended at %s (%d)", resp.Request.URL, resp.StatusCode)
			}
		}
		return nil
	}
	const rounds = 600
	if err := stranger(rounds); err != nil {
		t.Fatal(err)
	}
	one := vmHWM(t, p.cmd.Process.Pid)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- stranger(rounds) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	four := vmHWM(t, p.cmd.Process.Pid)
	t.Logf("botd run peak: %d MB after importing a 2 MB sessions file, %d MB after one stranger's %d forged 44 KB cookies and logins, %d MB after four at once",
		afterImport>>10, one>>10, rounds, four>>10)
	if four > peakLimitKB {
		t.Fatalf("botd run peaked at %d MB (limit %d MB)", four>>10, peakLimitKB>>20)
	}
	if strings.Contains(p.Logs(), "panic") {
		t.Fatalf("botd panicked:\n%s", p.Logs())
	}
}
