package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The official MCP TypeScript SDK's client, as Claude Desktop and most
// agents use it, comes with the conformance suite (make conformance
// installs Node 22 and the suite, the SDK among its packages, into
// .conformance/; CI runs it before make test). Without it these tests
// skip, saying so; BOTD_REQUIRE_SDK=1 makes that a failure.

type sdkCall struct {
	Tool      string         `json:"tool"`
	Args      map[string]any `json:"args,omitempty"`
	TimeoutMs int            `json:"timeoutMs,omitempty"`
}

type sdkContent struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

type sdkResult struct {
	IsError bool         `json:"isError"`
	Content []sdkContent `json:"content"`
	Tools   []string     `json:"tools"`
	Thrown  string       `json:"thrown"`
	Ms      float64      `json:"ms"`
}

func (r sdkResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// sdkTools finds Node and the SDK, or skips.
func sdkTools(t *testing.T) (node, sdk string) {
	t.Helper()
	node, sdk, err := findSDK()
	if err != nil {
		if os.Getenv("BOTD_REQUIRE_SDK") == "1" {
			t.Fatalf("the MCP TypeScript SDK is not installed (%v): run make conformance", err)
		}
		t.Skipf("the MCP TypeScript SDK is not installed (%v): make conformance installs it", err)
	}
	return node, sdk
}

// haveSDK says whether the SDK is installed, for a test with a leg of its
// own through it (logged when it is not).
func haveSDK(t *testing.T) bool {
	t.Helper()
	if _, _, err := findSDK(); err != nil {
		if os.Getenv("BOTD_REQUIRE_SDK") == "1" {
			t.Fatalf("the MCP TypeScript SDK is not installed (%v): run make conformance", err)
		}
		t.Logf("the leg through the MCP TypeScript SDK is left out: %v (make conformance installs it)", err)
		return false
	}
	return true
}

func findSDK() (node, sdk string, err error) {
	dir := os.Getenv("CONFORMANCE_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", ".conformance")
	}
	node = filepath.Join(dir, "node_modules", ".bin", "node")
	sdk = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")
	for _, p := range []string{node, filepath.Join(sdk, "dist", "esm", "client", "stdio.js")} {
		if _, err := os.Stat(p); err != nil {
			return "", "", err
		}
	}
	sdk, err = filepath.Abs(sdk)
	return node, sdk, err
}

// sdkClient runs calls through the SDK's client against `botd <args>`
// over stdio and returns what each answered.
func sdkClient(t *testing.T, env []string, botdArgs []string, calls []sdkCall) []sdkResult {
	t.Helper()
	node, sdk := sdkTools(t)
	in, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, append([]string{filepath.Join("testdata", "sdkclient.mjs"), sdk, botdBin}, botdArgs...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK client: %v\nstderr:\n%s", err, stderr.String())
	}
	var res []sdkResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(calls) {
		t.Fatalf("the SDK client answered %d of %d calls (%v):\n%s\nstderr:\n%s", len(res), len(calls), err, out, stderr.String())
	}
	return res
}

// With botd run stopped, the SDK's client (Claude Desktop's) lists the
// tools and gets at once a tool error naming `botd run`, though the
// config has an unset token under mcp.http.tokens the stdio server does
// not use.
func TestSDKClientWithoutRunFailsFast(t *testing.T) {
	sdkTools(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), stdioOnlyConfig)
	res := sdkClient(t, []string{"BOTD_CONFIG=", "BOTD_MCP_TOKEN_NEVER_SET="},
		[]string{"mcp", "--group", "family", "--config", filepath.Join(dir, "botd.yaml")},
		[]sdkCall{{Tool: "#list"}, {Tool: "fetch_media", Args: map[string]any{"mediaRef": "tg_abcdef012345"}, TimeoutMs: 60000}})
	if !slices.Contains(res[0].Tools, "fetch_media") || res[0].Thrown != "" {
		t.Fatalf("tools/list through the SDK: %+v", res[0])
	}
	if r := res[1]; r.Thrown != "" || !r.IsError || !strings.Contains(r.text(), "[no_host]") || !strings.Contains(r.text(), "`botd run`") {
		t.Fatalf("fetch_media without botd run through the SDK: want a tool error naming `botd run`, got %+v", r)
	}
	t.Logf("through the SDK: tools/list %.1f ms, fetch_media without botd run %.1f ms", res[0].Ms, res[1].Ms)
}
