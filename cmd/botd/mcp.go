package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/startpages"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/tools"
)

func cmdMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mcp", "botd mcp (--group FOLDER [--group FOLDER…] [--read-only] | --http [ADDR]) [--config FILE]",
		"Serve the media and memory tools over MCP: stdio for the groups given (what the agent and Claude Desktop use), "+
			"or Streamable HTTP where each bearer token of mcp.http.tokens reaches its groups. With several groups every "+
			"tool takes a required group argument; a read-only server offers only the tools that change nothing. Each "+
			"group's recent conversation is the resource botd://chat/<group>, which a client may subscribe to. "+
			"`botd run` must be running: it answers the media requests. remember and forget change the group's "+
			"MEMORY.md, and only the main group's server the global memory (groups_dir/global).\n\n"+
			"HTTP limits: a request without a valid token is answered and its connection closed; "+
			fmt.Sprintf("at most %d connections are open, and past that the oldest that never made an authorised request are closed first; ",
				mcp.DefaultMaxConns)+
			fmt.Sprintf("each token may hold %d GET streams and %d other requests at once (429 past that); ",
				mcp.DefaultMaxStreamsPerToken, mcp.DefaultMaxRequestsPerToken)+
			fmt.Sprintf("each token holds at most mcp.http.max_sessions_per_token sessions (default %d): one more closes its least recently used, whose client gets 404 and initialises again; ",
				mcp.DefaultMaxSessionsPerToken)+
			fmt.Sprintf("headers must arrive within %v, and an idle connection is closed after %v.",
				mcp.DefaultReadHeaderTimeout, mcp.DefaultIdleTimeout), stderr)
	var folders listFlag
	fs.Var(&folders, "group", "group `FOLDER` to serve over stdio; repeat it for several (each tool then takes a group argument)")
	readOnly := fs.Bool("read-only", false, "over stdio: offer only the tools that change nothing (no send_message, send_media, tasks, memory writes or generation)")
	var httpAddr httpFlag
	fs.Var(&httpAddr, "http", "serve Streamable HTTP on `[ADDR]`, or without it on mcp.http.listen from the config (default "+
		config.Section[mcp.Config](config.Defaults()).HTTP.Listen+"); loopback addresses only")
	cfgFlag := configFlag(fs)
	if err := parse(fs, joinHTTPAddr(args)); err != nil {
		return err
	}
	if (len(folders) == 0) == !httpAddr.on {
		fs.Usage()
		return fail(2, "give exactly one of --group FOLDER (repeatable) or --http [ADDR]")
	}
	if httpAddr.on && *readOnly {
		return fail(2, "--read-only is for stdio; over HTTP set read_only: true on the token in mcp.http.tokens")
	}
	// The stdio server reaches its groups' folders and botd run's IPC:
	// a mistake in a section only others read is a warning.
	var uses func(string) bool
	if len(folders) > 0 {
		uses = notUnder("mcp.http", "channels", "database", "ops", "scheduler")
	}
	cfg, err := loadConfigFor(*cfgFlag, uses, stderr)
	if err != nil {
		return err
	}
	set, err := groups.NewSet(cfg.AssistantName, cfg.GroupList())
	if err != nil {
		return fail(1, "groups: %v", err)
	}
	addKeptGroups(ctx, cfg, set, folders)
	// stdout carries the protocol; every log line goes to stderr.
	log := newLogger(cfg.LogLevel, stderr).With("component", "mcp")
	if len(folders) > 0 {
		srv, closeFn, err := groupServer(cfg, set, folders, *readOnly, nil)
		if err != nil {
			return err
		}
		defer closeFn()
		// Each group's IPC folder, and only those: this user must reach
		// every one of them.
		for _, f := range srv.Folders() {
			if err := checkHostAccess(cfg.DataDir, f); err != nil {
				return fail(1, "%v", err)
			}
		}
		if up, _ := dataDirRunning(cfg.DataDir); !up {
			log.Warn("botd run is not running on this data folder: the media tools answer so until it starts", "data_dir", cfg.DataDir)
		}
		followChats(ctx, cfg.DataDir, log, srv)
		releaseStartPages(log)
		return mcp.ServeStdio(ctx, srv.MCPServer, os.Stdin, stdout)
	}
	// Clients over HTTP may be on other machines: fetched files also come
	// back as short-lived resources (and presigned URLs with a bucket).
	links, err := remoteLinks(cfg)
	if err != nil {
		return err
	}
	servers := map[string]*mcp.Server{}
	tokens := map[string]string{}
	for _, t := range config.Section[mcp.Config](cfg).HTTP.Tokens {
		key := t.Key()
		if _, ok := servers[key]; !ok {
			srv, closeFn, err := groupServer(cfg, set, t.Folders(), t.ReadOnly, links)
			if err != nil {
				return err
			}
			defer closeFn()
			servers[key] = srv
		}
		tokens[t.Token] = key
	}
	if len(tokens) == 0 {
		return fail(1, "no tokens configured: add mcp.http.tokens: [{token: \"${BOTD_MCP_TOKEN}\", group: <folder>}] to the config")
	}
	all := make([]*mcp.Server, 0, len(servers))
	for _, s := range servers {
		all = append(all, s)
	}
	followChats(ctx, cfg.DataDir, log, all...)
	addr := httpAddr.addr
	if addr == "" {
		addr = config.Section[mcp.Config](cfg).HTTP.Listen
	}
	if addr == "" {
		return fail(1, "no address to serve on: give --http ADDR, or set mcp.http.listen in the config")
	}
	h, err := mcp.NewHTTPHandler(mcp.HTTPOptions{Addr: addr, AllowNonLoopback: config.Section[mcp.Config](cfg).HTTP.AllowRemote,
		AllowedHosts: config.Section[mcp.Config](cfg).HTTP.AllowedHosts, Tokens: tokens, Servers: servers, Log: log,
		Limits: mcp.HTTPLimits{MaxSessionsPerToken: config.Section[mcp.Config](cfg).HTTP.MaxSessionsPerToken}})
	if err != nil {
		return fail(1, "%v", err) // its errors say "mcp http:" already
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(1, "mcp http: %v", err)
	}
	log.Info("serving MCP over Streamable HTTP", "addr", ln.Addr().String(), "path", mcp.HTTPPath, "groups", len(servers))
	if config.Section[mcp.Config](cfg).HTTP.AllowRemote {
		log.Warn("botd mcp --http may be reachable from other machines (mcp.http.allow_remote): put it behind TLS, the tokens cross the network")
	}
	releaseStartPages(log)
	return mcp.Serve(ctx, ln, h)
}

// releaseStartPages gives back the binary's pages only the start touched
// (internal/startpages): a botd mcp runs as long as its client, often
// several at once beside botd run.
func releaseStartPages(log *slog.Logger) {
	if n, err := startpages.Release(); err != nil {
		log.Debug("start pages kept", "err", err)
	} else {
		log.Debug("start pages released", "kB", n/1024)
	}
}

// httpFlag is --http, whose address is optional: --http alone serves on
// mcp.http.listen. It is a boolean flag to the flag package, so that
// --http may be followed by another flag; joinHTTPAddr turns the
// documented `--http ADDR` into --http=ADDR before parsing.
type httpFlag struct {
	on   bool
	addr string
}

func (f *httpFlag) String() string   { return f.addr }
func (f *httpFlag) IsBoolFlag() bool { return true }

func (f *httpFlag) Set(v string) error {
	switch v {
	case "true": // --http alone
		f.on, f.addr = true, ""
	case "false":
		f.on, f.addr = false, ""
	default:
		f.on, f.addr = true, v
	}
	return nil
}

// joinHTTPAddr rewrites `--http ADDR` as `--http=ADDR`; an address never
// starts with "-", so `--http --config FILE` keeps --http alone.
func joinHTTPAddr(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--http" || a == "-http") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// groupServer builds the MCP server of one client for folders: a
// session per group, each reaching the host through that group's IPC
// folder only.
func groupServer(cfg *config.Config, set *groups.Set, folders []string, readOnly bool, links *mcp.LinkOptions) (*mcp.Server, func(), error) {
	mc := config.Section[media.Config](cfg)
	global, err := filepath.Abs(groups.GlobalWorkspace(cfg.GroupsDir).Root)
	if err != nil {
		return nil, nil, fail(1, "global memory folder: %v", err)
	}
	var clients []*ipc.Client
	closeAll := func() {
		for _, c := range clients {
			c.Close()
		}
	}
	var gs []mcp.Group
	for _, folder := range folders {
		g, ok := set.ByFolder(folder)
		if !ok {
			closeAll()
			return nil, nil, unknownGroup(set, folder)
		}
		dir, err := filepath.Abs(filepath.Join(cfg.GroupsDir, g.Folder))
		if err != nil {
			closeAll()
			return nil, nil, fail(1, "group folder: %v", err)
		}
		client := ipc.NewClient(ipc.GroupLayout(filepath.Join(cfg.DataDir, "ipc"), g.Folder), tools.IPCTypes())
		clients = append(clients, client)
		gs = append(gs, mcp.Group{Folder: g.Folder, Dir: dir, Main: g.Main,
			Caller: &runningCaller{next: client, dataDir: cfg.DataDir}})
	}
	component := newLogger(cfg.LogLevel, os.Stderr).With("component", "mcp")
	if len(folders) == 1 {
		component = component.With("group", folders[0])
	}
	srv, err := mcp.NewServer(mcp.Options{Groups: gs, GlobalDir: global, ReadOnly: readOnly,
		InlineMaxBytes: mc.InlineMaxBytes, Parse: mc.Parse.Limits(), Version: version, Links: links,
		Generate: generateTools(cfg), Internet: internetTools(cfg), Log: component})
	if err != nil {
		closeAll()
		return nil, nil, fail(1, "mcp server: %v", err)
	}
	return srv, closeAll, nil
}

// listFlag is a flag given once per value (--group a --group b).
type listFlag []string

func (f *listFlag) String() string { return strings.Join(*f, ",") }

func (f *listFlag) Set(v string) error {
	if slices.Contains(*f, v) {
		return fmt.Errorf("%q is given twice", v)
	}
	*f = append(*f, v)
	return nil
}
