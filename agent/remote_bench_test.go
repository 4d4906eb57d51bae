package agent

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/botd-dev/botd/groups"
)

// BenchmarkRemoteMCPSession is what a remote MCP server costs a run
// before its first tool call: one MCP session (initialize, tools/list)
// over loopback, and its end.
func BenchmarkRemoteMCPSession(b *testing.B) {
	ha := newRemoteMCP(b, "s3cret", "ok")
	a := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ToolOptions: ToolOptions{ExtraMCP: map[string]MCPServer{
		"ha": {URL: ha.url(), Headers: map[string]string{"Authorization": "Bearer s3cret"}, AllowPrivate: true, Tools: []string{"state"}}}}})
	g := &groups.Group{Folder: "main"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sess, err := a.tools.defaultTools(ctx, g)
		if err != nil || len(sess.Tools()) != 1 {
			b.Fatalf("session: %v", err)
		}
		sess.Close()
	}
}
