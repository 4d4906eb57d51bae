package mcp

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves srv over newline-delimited JSON-RPC on stdin/stdout
// until stdin closes or ctx is cancelled; both are a clean end (nil).
// Only protocol is written to stdout: the transport's own diagnostics go
// through slog.Default(), which the caller must point at stderr.
//
// mcp-go keeps one process-wide stdio session, so run at most one
// ServeStdio at a time per process.
func ServeStdio(ctx context.Context, srv *server.MCPServer, stdin io.Reader, stdout io.Writer) error {
	s := server.NewStdioServer(srv)
	s.SetErrorLogger(slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn))
	err := s.Listen(ctx, stdin, stdout)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}
