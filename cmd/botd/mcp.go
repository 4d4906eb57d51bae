package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/server"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mcp"
)

func cmdMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mcp", "botd mcp (--group FOLDER | --http ADDR) [--config FILE]",
		"Serve the media tools over MCP: stdio for one group (what the agent and Claude Desktop use), "+
			"or Streamable HTTP where each bearer token of mcp.http.tokens reaches one group. "+
			"`botd run` must be running: it answers the requests.", stderr)
	group := fs.String("group", "", "group folder to serve over stdio")
	httpAddr := fs.String("http", "", "serve Streamable HTTP on this address, e.g. 127.0.0.1:8765 (loopback only)")
	cfgFlag := configFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if (*group == "") == (*httpAddr == "") {
		fs.Usage()
		return fail(2, "give exactly one of --group FOLDER or --http ADDR")
	}
	cfg, err := loadConfig(*cfgFlag)
	if err != nil {
		return err
	}
	set, err := groups.NewSet(cfg.AssistantName, cfg.GroupList())
	if err != nil {
		return fail(1, "groups: %v", err)
	}
	// stdout carries the protocol; every log line goes to stderr.
	log := newLogger(cfg.LogLevel, stderr).With("component", "mcp")
	if *group != "" {
		srv, closeFn, err := groupServer(cfg, set, *group)
		if err != nil {
			return err
		}
		defer closeFn()
		return mcp.ServeStdio(ctx, srv, os.Stdin, stdout)
	}
	servers := map[string]*server.MCPServer{}
	tokens := map[string]string{}
	for _, t := range cfg.MCP.HTTP.Tokens {
		if _, ok := servers[t.Group]; !ok {
			srv, closeFn, err := groupServer(cfg, set, t.Group)
			if err != nil {
				return err
			}
			defer closeFn()
			servers[t.Group] = srv
		}
		tokens[t.Token] = t.Group
	}
	if len(tokens) == 0 {
		return fail(1, "no tokens configured: add mcp.http.tokens: [{token: \"${BOTD_MCP_TOKEN}\", group: <folder>}] to the config")
	}
	h, err := mcp.NewHTTPHandler(mcp.HTTPOptions{Addr: *httpAddr, Tokens: tokens, Servers: servers, Log: log})
	if err != nil {
		return fail(1, "mcp http: %v", err)
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return fail(1, "mcp http: %v", err)
	}
	log.Info("serving MCP over Streamable HTTP", "addr", ln.Addr().String(), "path", mcp.HTTPPath, "groups", len(servers))
	return mcp.Serve(ctx, ln, h)
}

func groupServer(cfg *config.Config, set *groups.Set, folder string) (*server.MCPServer, func(), error) {
	g, ok := set.ByFolder(folder)
	if !ok {
		return nil, nil, fail(1, "unknown group %q: it must be one of the folders under groups: in the config", folder)
	}
	dir, err := filepath.Abs(filepath.Join(cfg.GroupsDir, g.Folder))
	if err != nil {
		return nil, nil, fail(1, "group folder: %v", err)
	}
	client := ipc.NewClient(ipc.GroupLayout(filepath.Join(cfg.DataDir, "ipc"), g.Folder))
	srv, err := mcp.NewServer(mcp.Options{GroupDir: dir, InlineMaxBytes: cfg.Media.InlineMaxBytes, Caller: client, Version: version,
		Log: newLogger(cfg.LogLevel, os.Stderr).With("component", "mcp", "group", g.Folder)})
	if err != nil {
		client.Close()
		return nil, nil, fail(1, "mcp server: %v", err)
	}
	return srv, func() { client.Close() }, nil
}
