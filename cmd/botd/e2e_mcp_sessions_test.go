package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const mcpSessionsConfig = `
data_dir: ./data
groups_dir: ./groups
mcp:
  http:
    listen: "%s"
    tokens:
      - {token: family-token-0123456789, group: family}
      - {token: work-token-0123456789ab, group: work}
groups:
  - {folder: family, name: Family, chat: "telegram:-100"}
  - {folder: work, name: Work, chat: "telegram:-200"}
`

// mcpPost is one Streamable HTTP POST on protocol 2025-06-18 (the last
// with sessions); it returns the status, the body and the session id the
// answer handed out.
func mcpPost(t *testing.T, c *http.Client, endpoint, token, session, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Mcp-Session-Id")
}

const legacyInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

func rememberCall(text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"note":%q}}}`, text)
}

// vmRSS is a live process's resident set in KiB.
func vmRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// A holder of one group's token who initialises 10,000 sessions and never
// says DELETE grows `botd mcp --http` by at most 20 MB: past
// mcp.http.max_sessions_per_token the least recently used session of that
// token is closed. Its client is told 404, initialises again and its next
// call works; the other token's session is untouched.
func TestMCPHTTPSessionFloodIsBounded(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mcpSessionsConfig, addr))
	// Without the race detector, whose shadow memory would be measured.
	p := startBin(t, plainBotd(t), dir, "mcp", "--http", "--config", "botd.yaml")
	defer p.stop(t)
	servedAddr(t, p)
	endpoint := "http://" + addr + "/mcp"
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	const fam, work = "family-token-0123456789", "work-token-0123456789ab"

	_, _, workSession := mcpPost(t, c, endpoint, work, "", legacyInit)
	_, _, first := mcpPost(t, c, endpoint, fam, "", legacyInit)
	if workSession == "" || first == "" {
		t.Fatal("initialize handed out no session")
	}
	if code, body, _ := mcpPost(t, c, endpoint, fam, first, rememberCall("the flood began")); code != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("a call in the first session: %d %s", code, body)
	}
	// Warm up to the bound, then measure what 10,000 more cost.
	for range 256 {
		mcpPost(t, c, endpoint, fam, "", legacyInit)
	}
	before := vmRSS(t, p.cmd.Process.Pid)
	for i := range 10_000 {
		if code, body, id := mcpPost(t, c, endpoint, fam, "", legacyInit); code != 200 || id == "" {
			t.Fatalf("initialize %d: %d %s", i, code, body)
		}
	}
	after := vmRSS(t, p.cmd.Process.Pid)
	t.Logf("botd mcp --http RSS: %d KB after the first 257 sessions, %d KB after 10,000 more (%+d KB)", before, after, after-before)
	if after-before > 20<<10 {
		t.Errorf("10,000 sessions without DELETE grew RSS by %d KB (at most 20 MB)", after-before)
	}

	code, body, _ := mcpPost(t, c, endpoint, fam, first, rememberCall("still there?"))
	if code != http.StatusNotFound {
		t.Fatalf("the first session, closed for the bound, answered %d %s; want 404", code, body)
	}
	_, _, again := mcpPost(t, c, endpoint, fam, "", legacyInit)
	if code, body, _ := mcpPost(t, c, endpoint, fam, again, rememberCall("initialised again")); code != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("the call after initialising again: %d %s", code, body)
	}
	if code, body, _ := mcpPost(t, c, endpoint, work, workSession, rememberCall("the work session is untouched")); code != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("the other token's session: %d %s", code, body)
	}
	mem, err := os.ReadFile(filepath.Join(dir, "groups", "family", "MEMORY.md"))
	if err != nil || !strings.Contains(string(mem), "initialised again") {
		t.Errorf("family MEMORY.md lacks the call made after initialising again: %v\n%s", err, mem)
	}
}
