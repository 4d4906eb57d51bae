package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/ops"
	"github.com/botd-dev/botd/store"
)

const doctorLine = "botd doctor [--online] [--timeout D] [--config FILE]"

// cmdDoctor checks, one line each, what a person would otherwise find in
// the logs of a failed start: the config, each enabled network's
// credentials, the model keys (--online), the programs botd runs, the
// disk, the database and its lease, the addresses botd listens on. Exit
// 1 when a line says FAIL; WARN and INFO lines do not fail.
func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("doctor", doctorLine,
		"Check the config, each enabled chat network's credentials (by default, one read-only call each, free, within --timeout: "+
			networkChecks()+"), the model keys (only with --online: a one-token request each, which the provider bills), each remote MCP server of agent.mcp_servers (its tools, within --timeout), ffmpeg, ffprobe and pdftoppm on PATH, "+
			"free disk against media.max_disk_bytes, the database and which instance holds its lease, and the addresses botd "+
			"listens on. One line per check: OK, INFO, WARN or FAIL with the fix. Exit status 1 when any check FAILs.", stderr)
	cfgFlag := configFlag(fs)
	online := fs.Bool("online", false, "also send each model of llm.model, llm.fallback and media.describe a one-token request (billed) to prove its key")
	timeout := fs.Duration("timeout", 10*time.Second, "how long each network or model check may take")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *timeout <= 0 {
		return fail(2, "--timeout must be positive, got %s", *timeout)
	}
	r := &doctor{w: stdout, timeout: *timeout}
	path := configPath(*cfgFlag)
	cfg, err := config.Load(path)
	var ps config.Problems
	switch {
	case errors.As(err, &ps):
		for _, p := range ps {
			r.fail("config", p.Located())
		}
		r.fail("config", fmt.Sprintf("%s has %d problem(s); the other checks need a valid config", path, len(ps)))
		return r.exit()
	case err != nil:
		r.fail("config", err.Error())
		return r.exit()
	}
	r.ok("config", path)
	for _, w := range configWarnings(cfg) {
		r.warn("config", w)
	}
	for _, m := range cfg.RunReadiness() {
		r.fail("config", "botd run would refuse to start: "+m)
	}
	r.networks(ctx, cfg)
	r.models(ctx, cfg, *online)
	r.mcpServers(ctx, cfg)
	r.programs()
	r.disk(cfg)
	running := r.dataDir(cfg)
	r.database(ctx, cfg)
	r.listens(cfg, running)
	return r.exit()
}

// doctor writes the lines and remembers whether one failed.
type doctor struct {
	w       io.Writer
	timeout time.Duration
	failed  bool
}

func (r *doctor) line(verdict, what, text string) {
	fmt.Fprintf(r.w, "%-5s%s: %s\n", verdict, what, text)
}
func (r *doctor) ok(what, text string)   { r.line("OK", what, text) }
func (r *doctor) info(what, text string) { r.line("INFO", what, text) }
func (r *doctor) warn(what, text string) { r.line("WARN", what, text) }
func (r *doctor) fail(what, text string) {
	r.failed = true
	r.line("FAIL", what, text)
}

func (r *doctor) exit() error {
	if r.failed {
		return fail(1, "")
	}
	return nil
}

// noSink is the sink of channels built only to be checked: Check
// receives nothing, so nothing reaches it.
type noSink struct{}

func (noSink) Registered(string) bool { return false }
func (noSink) Deliver(context.Context, channels.Inbound) error {
	return errors.New("doctor: not receiving")
}
func (noSink) Migrated(context.Context, string, string) {}

// networkChecks says what each built-in network's check does, for the
// help, in name order.
func networkChecks() string {
	var says []string
	for _, n := range channels.Networks() {
		if n.Checks != "" {
			says = append(says, n.Checks)
		}
	}
	return strings.Join(says, "; ")
}

// networks asks each enabled chat network its Check, under the timeout:
// read-only and free, so it runs without --online.
func (r *doctor) networks(ctx context.Context, cfg *config.Config) {
	env := channels.Env{
		// Constructors want a registry; Check registers nothing, so it
		// has no database under it.
		Registry: mediaregistry.New(nil, config.Section[media.Config](cfg).RefTTL.D()), Sink: noSink{},
		Log: slog.New(slog.DiscardHandler), AssistantName: cfg.AssistantName,
	}
	for _, n := range networks(cfg) {
		if !n.enabled {
			continue
		}
		ch, err := n.build(env)
		if err != nil {
			r.fail(n.name, strings.TrimPrefix(err.Error(), n.name+": "))
			continue
		}
		c, ok := ch.(channels.Checker)
		if !ok {
			r.info(n.name, "enabled; this network has no check")
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		who, err := c.Check(cctx)
		cancel()
		switch {
		case errors.Is(err, channels.ErrUnchecked):
			r.warn(n.name, err.Error())
		case errors.Is(err, channels.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
			r.fail(n.name, strings.TrimPrefix(err.Error(), n.name+": ")+
				fmt.Sprintf(" — no answer within %s: check the network from this machine and the channel's API address", r.timeout))
		case err != nil:
			r.fail(n.name, strings.TrimPrefix(err.Error(), n.name+": "))
		default:
			r.ok(n.name, who)
		}
	}
}

// models lists the chain; with online, each usable entry gets a
// one-token request through its provider, the way runs reach it.
func (r *doctor) models(ctx context.Context, cfg *config.Config, online bool) {
	usable := map[string]bool{}
	for _, m := range cfg.LLM.UsableModels() {
		usable[m.Provider+"/"+m.Name] = true
	}
	type entry struct{ Provider, Name, role string }
	var entries []entry
	for _, m := range cfg.LLM.Models() {
		entries = append(entries, entry{m.Provider, m.Name, ""})
	}
	if d := config.Section[media.Config](cfg).Describe; d.Provider != "" {
		// The vision model that describes images: a chat model too.
		entries = append(entries, entry{d.Provider, d.Model, " (media.describe)"})
		if p, ok := cfg.LLM.Providers[d.Provider]; ok && d.Model != "" && (p.APIKey != "" || p.Keyless()) {
			usable[d.Provider+"/"+d.Model] = true
		}
	}
	ps := newLLMProviders(cfg, nil)
	seen := map[string]bool{}
	for _, m := range entries {
		key := m.Provider + "/" + m.Name
		if seen[key] {
			continue // one line per model, whatever uses it
		}
		seen[key] = true
		what := "model " + key + m.role
		if !usable[key] {
			r.warn(what, fmt.Sprintf("not used: llm.providers.%s has no api_key", m.Provider))
			continue
		}
		if !online {
			r.info(what, "key set, not tried (botd doctor --online sends it a one-token request)")
			continue
		}
		p, err := ps.get(m.Provider)
		if err != nil {
			r.fail(what, err.Error())
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		err = llm.Ping(cctx, p, m.Name)
		cancel()
		switch llm.KindOf(err) {
		case "":
			r.ok(what, "answered a one-token request")
		case llm.KindAuth:
			r.fail(what, fmt.Sprintf("the key was refused (%v): set llm.providers.%s.api_key to a valid key", err, m.Provider))
		case llm.KindRateLimit, llm.KindOverloaded:
			r.warn(what, fmt.Sprintf("the key works but the provider is busy or over quota: %v", err))
		default:
			r.fail(what, fmt.Sprintf("%v (check llm.providers.%s.base_url and the model name)", err, m.Provider))
		}
	}
}

// programs botd runs in a child to read what members share.
var programs = []struct{ name, why string }{
	{"ffmpeg", "install ffmpeg (apt install ffmpeg) to read videos and voice notes"},
	{"ffprobe", "install ffmpeg (apt install ffmpeg; it brings ffprobe) to know how long videos are"},
	{"pdftoppm", "install poppler-utils (apt install poppler-utils) to see scanned PDF pages"},
}

func (r *doctor) programs() {
	for _, p := range programs {
		bin, err := exec.LookPath(p.name)
		if err != nil {
			r.fail(p.name, "not on PATH — "+p.why)
			continue
		}
		r.ok(p.name, bin)
	}
}

// disk compares the free space where media are kept (data_dir's cache,
// groups_dir's copies) with what media may grow to.
func (r *doctor) disk(cfg *config.Config) {
	mc := config.Section[media.Config](cfg)
	seen := map[uint64]bool{}
	for _, d := range []struct{ key, dir string }{{"data_dir", cfg.DataDir}, {"groups_dir", cfg.GroupsDir}} {
		dir := existingAncestor(d.dir)
		var st unix.Statfs_t
		var fi unix.Stat_t
		if err := unix.Statfs(dir, &st); err != nil {
			r.fail("disk", fmt.Sprintf("%s: %v", d.key, err))
			continue
		}
		if unix.Stat(dir, &fi) == nil {
			if seen[uint64(fi.Dev)] {
				continue // the same disk as the line before
			}
			seen[uint64(fi.Dev)] = true
		}
		free := int64(st.Bavail) * int64(st.Bsize)
		budget, one := mc.MaxDiskBytes, mc.MaxDownloadBytes
		switch {
		case free < 2*one:
			r.fail("disk", fmt.Sprintf("%s free on the disk of %s: a downloaded file (media.max_download_bytes %s) is kept twice and "+
				"would not fit — free space or move %s", size(free), d.key, size(one), d.key))
		case free < budget:
			r.warn("disk", fmt.Sprintf("%s free on the disk of %s, less than media.max_disk_bytes (%s): the disk fills before the "+
				"budget does — lower media.max_disk_bytes or free space", size(free), d.key, size(budget)))
		default:
			r.ok("disk", fmt.Sprintf("%s free on the disk of %s, media.max_disk_bytes is %s", size(free), d.key, size(budget)))
		}
	}
}

// existingAncestor is dir or its nearest parent that exists: botd
// creates data_dir at its first start, on the disk of that parent.
func existingAncestor(dir string) string {
	dir, _ = filepath.Abs(dir)
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), -1
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTP"[i])
}

// dataDir says whether data_dir can be written and whether a `botd run`
// holds it (the lock of datalock.go), and returns that holder, or "".
func (r *doctor) dataDir(cfg *config.Config) (running string) {
	fi, err := os.Stat(cfg.DataDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.info("data_dir", fmt.Sprintf("%s does not exist yet; botd run creates it", cfg.DataDir))
		return ""
	case err != nil:
		r.fail("data_dir", err.Error())
		return ""
	case !fi.IsDir():
		r.fail("data_dir", fmt.Sprintf("%s is not a folder: point data_dir at a folder botd may write", cfg.DataDir))
		return ""
	}
	if err := unix.Access(cfg.DataDir, unix.W_OK|unix.X_OK); err != nil {
		r.fail("data_dir", fmt.Sprintf("%s is not writable by this user (%v): run botd as its owner or fix its permissions", cfg.DataDir, err))
		return ""
	}
	running = dataDirHolder(cfg.DataDir)
	if running == "" {
		r.info("data_dir", fmt.Sprintf("%s: no botd is running on this data folder", cfg.DataDir))
	} else {
		r.ok("data_dir", fmt.Sprintf("%s: botd %sis running on this data folder", cfg.DataDir, running))
	}
	return running
}

// dataDirHolder is "(pid N, running since T) " (or "" for its text not
// written yet, then "another process ") when a process holds dir's lock,
// "" when none does. It tries a shared lock without waiting and lets go
// at once: a `botd run` starting in that instant is told another botd
// holds the folder and can be started again.
func dataDirHolder(dir string) string {
	h, _, _ := probeDataDir(dir)
	return h
}

// database opens the database read as `botd status` does and says which
// instance holds the lease.
func (r *doctor) database(ctx context.Context, cfg *config.Config) {
	dbc := config.Section[store.Config](cfg)
	if dbc.Driver == "sqlite" {
		if _, err := os.Stat(dbc.Path(cfg.DataDir)); errors.Is(err, os.ErrNotExist) {
			r.info("database", "sqlite, not created yet; botd run creates it")
			return
		}
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	st, err := store.Connect(cctx, *dbc, cfg.DataDir)
	if err != nil {
		r.fail("database", hideDSN(err.Error(), dbc.DSN)+" — check database.dsn and that the server is up")
		return
	}
	defer st.Close()
	r.ok("database", dbc.Driver+" opens and is up to date")
	l, found, err := st.CurrentLease(cctx)
	now := time.Now()
	switch {
	case err != nil:
		r.fail("lease", hideDSN(err.Error(), dbc.DSN))
	case !found:
		r.info("lease", "no instance has held it yet")
	case !l.Live(now):
		r.info("lease", fmt.Sprintf("no instance is active (%s's lease, epoch %d, lapsed %s ago)", l.Holder, l.Epoch, ago(now.Sub(l.Expires))))
	default:
		r.ok("lease", fmt.Sprintf("%s is active since %s ago (epoch %d, renewed %s ago)", l.Holder, ago(now.Sub(l.Acquired)), l.Epoch, ago(now.Sub(l.Renewed))))
	}
}

// hideDSN keeps a Postgres DSN, which may hold a password, out of a line.
func hideDSN(s, dsn string) string {
	if dsn == "" {
		return s
	}
	return strings.ReplaceAll(s, dsn, "<database.dsn>")
}

// listens tries each address botd would listen on. One in use is fine
// when the botd running on this data folder holds it (running names it).
func (r *doctor) listens(cfg *config.Config, running string) {
	mcpc := config.Section[mcp.Config](cfg)
	opsc := config.Section[ops.Config](cfg)
	type addr struct{ key, addr, by string }
	var as []addr
	c := cfg.Channels
	for _, n := range channels.Networks() {
		if l, ok := c.Network(n.Name).(channels.Listener); ok {
			ls := l.Listens()
			for _, key := range slices.Sorted(maps.Keys(ls)) {
				as = append(as, addr{key, ls[key], "run"})
			}
		}
	}
	if len(mcpc.HTTP.Tokens) > 0 && mcpc.HTTP.Listen != "" {
		as = append(as, addr{"mcp.http.listen", mcpc.HTTP.Listen, "mcp"})
	}
	if opsc.Listen != "" {
		as = append(as, addr{"ops.listen", opsc.Listen, "run"})
	}
	for _, a := range as {
		ln, err := net.Listen("tcp", a.addr)
		if err == nil {
			ln.Close()
			r.ok(a.key, a.addr+" is free")
			continue
		}
		switch {
		case !errors.Is(err, syscall.EADDRINUSE):
			r.fail(a.key, fmt.Sprintf("cannot listen on %s: %v", a.addr, errors.Unwrap(err)))
		case a.by == "run" && running != "":
			r.ok(a.key, fmt.Sprintf("%s is in use, presumably by the botd %srunning on this data folder", a.addr, running))
		case a.key == "channels.web.listen" && a.addr == web.DefaultListen:
			r.warn(a.key, fmt.Sprintf("%s is in use by another program: botd run takes the next free port and prints it; "+
				"set channels.web.listen to choose one", a.addr))
		case a.key == "ops.listen" && a.addr == ops.DefaultListen:
			r.warn(a.key, fmt.Sprintf("%s is in use by another program: botd run serves no /healthz, /readyz or /metrics; "+
				"set ops.listen to a free address", a.addr))
		case a.by == "mcp":
			r.warn(a.key, fmt.Sprintf("%s is in use: fine if `botd mcp --http` runs there; otherwise stop what holds it or change %s", a.addr, a.key))
		default:
			r.fail(a.key, fmt.Sprintf("%s is in use by another program: stop it or change %s", a.addr, a.key))
		}
	}
}

// mcpServers asks each remote MCP server of agent.mcp_servers for its
// tools, as a run would: refused address or credentials, unreachable, or
// allowed tools it does not have; and groups no group has.
func (r *doctor) mcpServers(ctx context.Context, cfg *config.Config) {
	ac := config.Section[agent.Config](cfg)
	for _, name := range slices.Sorted(maps.Keys(ac.MCPServers)) {
		srv := ac.MCPServers[name]
		what := "MCP server " + name
		for _, g := range srv.Groups {
			if !slices.ContainsFunc(cfg.Groups, func(gc config.Group) bool { return gc.Folder == g }) {
				r.warn(what, fmt.Sprintf("agent.mcp_servers.%s.groups names %q, which is no group folder of the config (fine for a group approved in a chat)", name, g))
			}
		}
		if srv.URL == "" {
			continue // a command: started by each run
		}
		if len(srv.Tools) == 0 {
			r.info(what, "no tools allowed (agent.mcp_servers."+name+".tools): not used")
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		listed, err := agent.CheckRemoteMCP(cctx, name, srv, cfg.DataDir)
		cancel()
		if err != nil {
			r.fail(what, err.Error()+"; runs go on without its tools")
			continue
		}
		var missing []string
		for _, t := range srv.Tools {
			if !slices.Contains(listed, t) {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			r.warn(what, fmt.Sprintf("answered, but has no tool %s (it lists %s)", strings.Join(missing, ", "), strings.Join(listed, ", ")))
			continue
		}
		r.ok(what, fmt.Sprintf("answered with %d tools; %s offered", len(listed), strings.Join(srv.Tools, ", ")))
	}
}
