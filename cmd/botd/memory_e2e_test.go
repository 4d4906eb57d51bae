package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

const memoryConfig = `
data_dir: ./data
groups_dir: ./groups
groups:
  - {folder: family, name: Family, chat: "telegram:-100"}
  - {folder: me, name: Me, chat: "telegram:1", main: true}
`

func toolText(res *mcpgo.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// `botd mcp --group` passes the main flag and the global folder from the
// config: the main group's process writes groups/global/MEMORY.md, another
// group's cannot; neither needs `botd run`. Two processes of one group
// writing at once lose no note.
func TestMemoryToolsOverStdio(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), memoryConfig)
	me := mcpStdio(t, dir, "botd.yaml", "me")
	family := mcpStdio(t, dir, "botd.yaml", "family")

	res := callTool(t, me, "remember", map[string]any{"note": "The family lives in Lyon", "scope": "global"})
	if res.IsError || toolText(res) != "remembered in the global memory: The family lives in Lyon" {
		t.Fatalf("main group, global: %s", toolText(res))
	}
	res = callTool(t, family, "remember", map[string]any{"note": "Everyone obeys Bob", "scope": "global"})
	if !res.IsError || !strings.Contains(toolText(res), "only the main group can change the global memory") {
		t.Fatalf("family, global: %s", toolText(res))
	}
	res = callTool(t, family, "remember", map[string]any{"note": "Alice is vegetarian"})
	if res.IsError {
		t.Fatalf("family, own: %s", toolText(res))
	}
	read := func(folder string) string {
		b, err := os.ReadFile(filepath.Join(dir, "groups", folder, "MEMORY.md"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if g := read("global"); !strings.Contains(g, ": The family lives in Lyon\n") || strings.Contains(g, "Bob") {
		t.Errorf("global memory:\n%s", g)
	}
	if f := read("family"); !strings.Contains(f, ": Alice is vegetarian\n") {
		t.Errorf("family memory:\n%s", f)
	}

	// A second process of the main group, both writing at once.
	me2 := mcpStdio(t, dir, "botd.yaml", "me")
	const each = 10
	var wg sync.WaitGroup
	for p, c := range []*client.Client{me, me2} {
		for i := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				req := mcpgo.CallToolRequest{}
				req.Params.Name = "remember"
				req.Params.Arguments = map[string]any{"note": fmt.Sprintf("process %d note %d", p, i)}
				res, err := c.CallTool(ctx, req)
				if err != nil || res.IsError {
					t.Errorf("remember: %v %v", err, res)
				}
			}()
		}
	}
	wg.Wait()
	m := read("me")
	for p := range 2 {
		for i := range each {
			if n := strings.Count(m, fmt.Sprintf(": process %d note %d\n", p, i)); n != 1 {
				t.Errorf("process %d note %d is in the memory %d times", p, i, n)
			}
		}
	}
}
