package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

const mcpHTTPConfig = `
data_dir: ./data
groups_dir: ./groups
mcp:
  http:
    listen: "%s"
    tokens: [{token: family-token-0123456789, group: family}]
groups:
  - {folder: family, name: Family, chat: "telegram:-100"}
`

var servingAddr = regexp.MustCompile(`serving MCP over Streamable HTTP.* addr=(\S+)`)

// servedAddr is the address a `botd mcp --http` process logged.
func servedAddr(t *testing.T, p *proc) string {
	t.Helper()
	p.waitLog(t, "serving MCP")
	m := servingAddr.FindStringSubmatch(p.Logs())
	if m == nil {
		t.Fatalf("no address in the log:\n%s", p.Logs())
	}
	return m[1]
}

// initializeOver checks that an authorised client can initialize at addr.
func initializeOver(t *testing.T, addr string) {
	t.Helper()
	c, err := client.NewStreamableHttpClient("http://"+addr+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer family-token-0123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	initMCP(t, c)
}

// `botd mcp --http` without an address serves on mcp.http.listen.
func TestMCPHTTPListensOnConfiguredAddress(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mcpHTTPConfig, addr))
	p := startBotd(t, dir, "mcp", "--http", "--config", "botd.yaml")
	if got := servedAddr(t, p); got != addr {
		t.Fatalf("serving on %s, want mcp.http.listen %s", got, addr)
	}
	initializeOver(t, addr)
	p.stop(t)
}

// An address given to --http, in either form, wins over mcp.http.listen;
// without one, the configured address is used, and here it is taken.
func TestMCPHTTPFlagOverridesListen(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mcpHTTPConfig, busy.Addr()))

	out, code := runCLI(t, dir, "mcp", "--http", "--config", "botd.yaml")
	if code != 1 || !strings.Contains(out, busy.Addr().String()) {
		t.Errorf("--http alone with mcp.http.listen taken: exit %d, want 1 naming %s:\n%s", code, busy.Addr(), out)
	}
	for _, args := range [][]string{
		{"mcp", "--http", "127.0.0.1:0", "--config", "botd.yaml"},
		{"mcp", "--http=127.0.0.1:0", "--config", "botd.yaml"},
		{"mcp", "--config", "botd.yaml", "--http", "127.0.0.1:0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			p := startBotd(t, dir, args...)
			addr := servedAddr(t, p)
			if addr == busy.Addr().String() || !strings.HasPrefix(addr, "127.0.0.1:") {
				t.Fatalf("serving on %s", addr)
			}
			initializeOver(t, addr)
			p.stop(t)
		})
	}
}

func TestMCPHTTPArgs(t *testing.T) {
	for _, tc := range []struct {
		args, want []string
	}{
		{[]string{"--http"}, []string{"--http"}},
		{[]string{"--http", "--config", "c"}, []string{"--http", "--config", "c"}},
		{[]string{"--http", "127.0.0.1:1", "--config", "c"}, []string{"--http=127.0.0.1:1", "--config", "c"}},
		{[]string{"-http", "[::1]:1"}, []string{"-http=[::1]:1"}},
		{[]string{"--http=127.0.0.1:1"}, []string{"--http=127.0.0.1:1"}},
		{[]string{"--config", "c", "--", "--http", "x"}, []string{"--config", "c", "--", "--http", "x"}},
	} {
		if got := joinHTTPAddr(tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("joinHTTPAddr(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// The stdio server's group flags: refused before anything is served.
func TestMCPGroupFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mcpHTTPConfig, "127.0.0.1:8765"))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a group twice", []string{"--group", "family", "--group", "family"}, 2, `"family" is given twice`},
		{"read-only over http", []string{"--http", "--read-only"}, 2, "read_only: true on the token"},
		{"an unknown second group", []string{"--group", "family", "--group", "nope"}, 1, "nope"},
		{"neither", []string{"--read-only"}, 2, "give exactly one of --group FOLDER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, dir, append(append([]string{"mcp"}, tc.args...), "--config", "botd.yaml")...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}
