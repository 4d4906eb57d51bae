package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/internal/testwait"
)

// A config whose mcp.http token comes from a variable nobody set: a
// mistake only `botd mcp --http` would trip over.
const stdioOnlyConfig = `
data_dir: ./data
groups_dir: ./groups
mcp:
  http:
    tokens: [{token: "${BOTD_MCP_TOKEN_NEVER_SET}", group: family}]
groups:
  - {folder: family, name: Family, chat: "telegram:-100"}
`

// stdioClient starts `botd mcp --group family` over stdio; logs is what
// it has written to stderr so far.
func stdioClient(t *testing.T, dir string) (c *client.Client, logs func() string) {
	t.Helper()
	c, err := client.NewStdioMCPClient(botdBin, append(os.Environ(), "BOTD_CONFIG=", "BOTD_MCP_TOKEN_NEVER_SET="),
		"mcp", "--group", "family", "--config", filepath.Join(dir, "botd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var mu sync.Mutex
	var buf strings.Builder
	if r, ok := client.GetStderr(c); ok {
		go func() {
			b := make([]byte, 4096)
			for {
				n, err := r.Read(b)
				mu.Lock()
				buf.Write(b[:n])
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	initMCP(t, c)
	return c, func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
}

// With `botd run` down, `botd mcp --group` still starts (the unset token
// under mcp.http is a warning, not a stop), lists its tools, and a tool
// that needs botd run answers at once that it is not running, naming
// `botd run`: not after the call's two-minute wait.
func TestMCPStdioWithoutRunFailsFast(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), stdioOnlyConfig)
	c, logs := stdioClient(t, dir)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tl, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil || len(tl.Tools) == 0 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tl.Tools))
	}
	start := time.Now()
	res := callTool(t, c, "fetch_media", map[string]any{"mediaRef": "tg_abcdef012345"})
	took := time.Since(start)
	text := resultText(res)
	if !res.IsError || !strings.Contains(text, "[no_host]") || !strings.Contains(text, "`botd run`") {
		t.Fatalf("want a no_host error naming `botd run`, got %v: %s", res.IsError, text)
	}
	if strings.Contains(text, dir) {
		t.Errorf("the tool error names a host path: %s", text)
	}
	// The no_host answer comes from the data folder's lock, before any
	// wait for a host (which would be botd's 120 s, past a client's 60 s):
	// its words are the verdict, the time only a figure.
	t.Logf("fetch_media without botd run answered in %v", took)
	testwait.Until(t, "the start-up warnings", func() bool {
		l := logs()
		return strings.Contains(l, "mcp.http.tokens[0].token") && strings.Contains(l, "not used by this command") &&
			strings.Contains(l, "botd run is not running")
	})
}

// A call in flight while botd run holds the data folder ends as soon as
// it lets go, with the same answer.
func TestMCPStdioRunStopsMidCall(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), stdioOnlyConfig)
	// The test holds the lock as botd run would; nothing answers IPC.
	lock, err := lockDataDir(filepath.Join(dir, "data"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	c, _ := stdioClient(t, dir)

	req := filepath.Join(dir, "data", "ipc", "family", "requests")
	type answer struct {
		res *mcpgo.CallToolResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r := mcpgo.CallToolRequest{}
		r.Params.Name = "fetch_media"
		r.Params.Arguments = map[string]any{"mediaRef": "tg_abcdef012345"}
		res, err := c.CallTool(ctx, r)
		got <- answer{res, err}
	}()
	// The request is written: botd run "is up" and the call waits for it.
	testwait.Until(t, "the request file", func() bool {
		es, _ := os.ReadDir(req)
		return len(es) > 0
	})
	lock.Close()
	a := <-got
	if a.err != nil {
		t.Fatal(a.err)
	}
	if text := resultText(a.res); !a.res.IsError || !strings.Contains(text, "`botd run`") {
		t.Fatalf("want the not-running answer, got: %s", text)
	}
	if es, _ := os.ReadDir(req); len(es) != 0 {
		t.Errorf("the abandoned request stays for a later botd run: %d file(s)", len(es))
	}
}

// `botd mcp` run as an OS user who may not enter botd run's data folder
// stops at once and names the folder and the group to join. (Run as
// root, it starts botd as nobody; otherwise it is skipped.)
func TestMCPStdioPermissionNamesFolderAndGroup(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start botd as another user")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	// A folder nobody may enter and read, holding botd and the config.
	pub, err := os.MkdirTemp("", "botd-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	if err := os.Chmod(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(pub, "botd")
	b, err := os.ReadFile(botdBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(pub, "botd.yaml"), stdioOnlyConfig)
	// botd run's data folder, as it creates it: its own, mode 0750.
	data := filepath.Join(pub, "data")
	lock, err := lockDataDir(data, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := os.Chmod(data, 0o750); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--group", "family", "--config", filepath.Join(pub, "botd.yaml"))
	cmd.Dir = pub
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + pub}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1:\n%s", err, out)
	}
	group := "root"
	if g, err := user.LookupGroupId("0"); err == nil {
		group = g.Name
	}
	for _, want := range []string{"permission denied on " + data, "group " + group, "usermod -aG " + group + " nobody"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The refusal of a non-loopback address names the key that allows it,
// once prefixed; with the key, botd serves there.
func TestMCPHTTPRemoteNeedsAllowRemote(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mcpHTTPConfig, "0.0.0.0:0"))
	out, code := runCLI(t, dir, "mcp", "--http", "--config", "botd.yaml")
	if code != 1 || !strings.Contains(out, "mcp.http.allow_remote: true") || strings.Contains(out, "mcp http: mcp http:") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	writeFile(t, filepath.Join(dir, "remote.yaml"), strings.Replace(fmt.Sprintf(mcpHTTPConfig, "0.0.0.0:0"),
		"    listen:", "    allow_remote: true\n    listen:", 1))
	p := startBotd(t, dir, "mcp", "--http", "--config", "remote.yaml")
	_, port, err := net.SplitHostPort(servedAddr(t, p))
	if err != nil {
		t.Fatal(err)
	}
	initializeOver(t, "127.0.0.1:"+port)
	p.stop(t)
}

// `botd status` reads the lease only: an unset token variable under
// mcp.http is a warning there, and status goes on to the database.
func TestStatusWarnsAboutUnusedSections(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), stdioOnlyConfig)
	out, code := runCLI(t, dir, "status", "--config", "botd.yaml")
	if code != 1 || !strings.Contains(out, "warning:") || !strings.Contains(out, "mcp.http.tokens[0].token") ||
		!strings.Contains(out, "botd has not run here") || strings.Contains(out, "problem(s)") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// botd mcp --http uses that section: there it stops.
	out, code = runCLI(t, dir, "mcp", "--http", "--config", "botd.yaml")
	if code != 1 || !strings.Contains(out, "1 problem(s)") || !strings.Contains(out, "BOTD_MCP_TOKEN_NEVER_SET") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// A missing config names the folder looked in and how to name another;
// an unknown group lists the groups; a bare media prune needs --yes.
func TestCLIFirstMistakes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), stdioOnlyConfig)
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no config here", []string{"status"}, 1, []string{"no config file config.yaml in " + dir, "--config FILE", "BOTD_CONFIG"}},
		{"no config at --config", []string{"config", "check", "--config", "nope.yaml"}, 1, []string{"no config file nope.yaml in " + dir, "check the --config path"}},
		{"unknown group", []string{"mcp", "--group", "famly", "--config", "botd.yaml"}, 1, []string{`unknown group "famly": the config's groups are family`}},
		{"bare prune", []string{"media", "prune", "--config", "botd.yaml"}, 2, []string{"add --yes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runCLI(t, dir, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "ipc", "famly")); err == nil {
		t.Error("an unknown group got an IPC folder")
	}
}
