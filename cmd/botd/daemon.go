package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/chatctl"
	"github.com/botd-dev/botd/chatlog"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/lease"
	"github.com/botd-dev/botd/llm/uploads"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/generation"
	"github.com/botd-dev/botd/media/links"
	"github.com/botd-dev/botd/media/mediahost"
	"github.com/botd-dev/botd/media/sending"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/ops"
	"github.com/botd-dev/botd/scheduler"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
	"github.com/botd-dev/botd/transcribe"
)

// daemon wires the packages together for `botd run`.
type daemon struct {
	cfg    *config.Config
	log    *slog.Logger
	store  *store.Store
	reg    *mediaregistry.Registry
	cache  *mediaregistry.Cache
	budget *diskbudget.Budget
	groups *groups.Set
	chans  map[string]channels.Channel
	media  *mediahost.Host
	// videos runs the video jobs (media/generation); downloads is the
	// media service, whose timeouts a reload may change.
	videos    *generation.Service
	downloads *media.Service
	host      *ipc.Host
	hostMu    sync.Mutex // one followGroups at a time
	sink      channels.Sink
	agent     *agent.Agent
	// cmds answers the chat's commands (chatctl), the gate after access's.
	cmds  *chatctl.Commands
	sched *scheduler.Scheduler
	// history answers the conversation tools (search_messages, …).
	history *chatlog.Service
	// llm builds the providers; uploads is nil when llm.files.upload is off.
	llm     *llmProviders
	uploads *uploads.Store
	wg      sync.WaitGroup // sweepers
	// out receives what a person must read (the web address); mon
	// watches the channels for the web dashboard (nil without it).
	out io.Writer
	mon *web.Monitor
	// instance is this process's id in the lease; keeper holds it.
	instance string
	keeper   *lease.Keeper
	// metrics are botd's series for /metrics (ops.go); serving is set
	// while the active instance's channels and agent run, for /readyz.
	metrics *ops.Metrics
	serving atomic.Bool
	// chanSnap is the channels once built, for the replies of access
	// (chats.go) while channels deliver; keptKick wakes the watcher of
	// the groups approved live.
	chanSnap atomic.Pointer[map[string]channels.Channel]
	keptKick chan struct{}
	// cfgPath is the config file a reload reads again (reload.go); live
	// is the config in force (d.cfg is the one botd started with), and
	// cfgSum the bytes last read, so a change of the file that changes
	// nothing is not a reload. reloadMu holds one reload at a time.
	cfgPath  string
	live     atomic.Pointer[config.Config]
	cfgSum   [32]byte
	reloadMu sync.Mutex
	// hup delivers SIGHUP, caught for the whole run (notifyHUP);
	// logLevel is log's level, which a reload may change (nil: fixed).
	hup      <-chan os.Signal
	logLevel *slog.LevelVar
	// clock paces the chat marks (chatmarks.go): nil is the wall clock;
	// a test moves a clock.Fake.
	clock clock.Clock
}

func newDaemon(cfg *config.Config, log *slog.Logger) (*daemon, error) {
	gs, err := groups.NewSet(cfg.AssistantName, cfg.GroupList())
	if err != nil {
		return nil, fail(1, "groups: %v", err)
	}
	d := &daemon{cfg: cfg, log: log, groups: gs, chans: map[string]channels.Channel{}, out: io.Discard, keptKick: make(chan struct{}, 1)}
	d.live.Store(cfg)
	d.observe()
	d.observeOps()
	return d, nil
}

func (d *daemon) ipcRoot() string { return filepath.Join(d.cfg.DataDir, "ipc") }

// open does the start-up work: the database, the registry, the cache and
// the group workspaces.
func (d *daemon) open(ctx context.Context) error {
	mc := config.Section[media.Config](d.cfg)
	st, err := store.Connect(ctx, *config.Section[store.Config](d.cfg), d.cfg.DataDir)
	if err != nil {
		return err
	}
	d.store = st
	d.history = chatlog.NewService(st, d.groups, d.cfg.Location(), d.log.With("component", "chatlog"))
	d.reg = mediaregistry.New(st.DB, mc.RefTTL.D())
	d.cache, err = mediaregistry.OpenCache(filepath.Join(d.cfg.DataDir, "media"), st.DB, mc.CacheTTL.D())
	if err != nil {
		return err
	}
	if err := useStore(d.cfg, d.cache); err != nil {
		return err
	}
	if err := d.loadKept(ctx); err != nil {
		return err
	}
	for _, g := range d.groups.All() {
		if _, err := groups.EnsureWorkspace(d.cfg.GroupsDir, g); err != nil {
			d.disable(g.Folder, err)
		}
	}
	d.budget = newBudget(d.cfg, d.cache, d.groups, d.log.With("component", "disk"))
	return nil
}

// close waits for the host and the sweepers (their context must have
// ended) and closes the store last, when nothing can write to it.
func (d *daemon) close() {
	if d.host != nil {
		d.host.Wait()
	}
	d.wg.Wait()
	if d.store != nil {
		d.store.Close()
	}
}

// buildChannels constructs the enabled channels; nothing connects yet.
func (d *daemon) buildChannels() error {
	// Each channel adds channel=<name> to env.Log itself.
	// One inbox for all: a store refusing messages is one outage, logged
	// once and shown on the dashboard, whichever channels wait on it.
	inbox := channels.NewInbox(d.log, nil, channels.DefaultRetry)
	d.mon.WatchInbox(inbox)
	env := channels.Env{Registry: d.reg, Sink: d.mon.Sink(d.metrics.Sink(d.sink)), Log: d.log, AssistantName: d.cfg.AssistantName, Inbox: inbox}
	if d.keeper != nil {
		// Every call a channel makes to its network asks the lease first.
		env.Fence = d.keeper
	}
	for _, n := range networks(d.cfg) {
		if !n.enabled {
			continue
		}
		ch, err := n.build(env)
		if err != nil {
			return fail(1, "%s: %v", n.name, err)
		}
		d.chans[ch.Name()] = ch
	}
	return d.buildWeb(env)
}

// network is one chat network of the config and how to construct it.
type network struct {
	name    string
	enabled bool
	build   func(env channels.Env) (channels.Channel, error)
}

// networks lists the chat networks built in (networks.go; not the web
// rooms, which need the daemon's services), each from its registered
// description and its section of the config; constructing one connects
// nothing. `botd run` starts the enabled ones, `botd doctor` asks each
// its Check.
func networks(cfg *config.Config) []network {
	host := channels.Host{DataDir: cfg.DataDir, Database: *config.Section[store.Config](cfg)}
	var out []network
	for _, n := range channels.Networks() {
		nc := cfg.Channels.Network(n.Name)
		if n.New == nil || nc == nil {
			continue
		}
		out = append(out, network{n.Name, nc.On(), func(env channels.Env) (channels.Channel, error) { return n.New(env, host, nc) }})
	}
	return out
}

// startHost serves the media tools: over IPC files to `botd mcp` (Claude
// Desktop, any external MCP client), in-process to the built-in agent.
func (d *daemon) startHost(ctx context.Context) error {
	ms, videos, err := d.newMedia(d.chans)
	if err != nil {
		return err
	}
	d.media, d.videos = ms, videos
	d.host = d.newHost(hostHandler{d}, d.log)
	if err := d.host.Start(ctx); err != nil {
		return err
	}
	for folder, err := range d.host.Disabled() {
		d.disable(folder, err)
	}
	return nil
}

// newMedia builds the services that answer the media tools over chans
// (none on a standby: what is held can be read, nothing downloaded), and
// the host that routes each tool to its service; the generation service
// also runs the video jobs.
func (d *daemon) newMedia(chans map[string]channels.Channel) (*mediahost.Host, *generation.Service, error) {
	mc := config.Section[media.Config](d.cfg)
	tr, err := d.transcriber()
	if err != nil {
		return nil, nil, err
	}
	fetcher, searcher, err := d.web()
	if err != nil {
		return nil, nil, err
	}
	log := d.log.With("component", "media")
	pages := links.NewPages(links.PagesOptions{Web: fetcher, Store: d.store, Registry: d.reg, Cache: d.cache,
		Budget: d.budget, Meter: d.metrics, Log: log})
	ms := media.New(media.Options{
		Transcriber: tr, Bill: d.store, Pages: pages,
		Registry: d.reg, Cache: d.cache, Channels: chans, Groups: d.groups, GroupsDir: d.cfg.GroupsDir,
		MaxDownloadBytes: mc.MaxDownloadBytes, DownloadTimeout: mc.DownloadTimeout.D(),
		DownloadIdleTimeout: mc.DownloadIdleTimeout.D(), DownloadsPerGroup: mc.DownloadsPerGroup,
		Budget: d.budget, Parse: mc.Parse.Limits(), Meter: d.metrics, Log: log,
	})
	d.downloads = ms
	ss := sending.New(sending.Options{Channels: chans, Groups: d.groups, GroupsDir: d.cfg.GroupsDir, Log: log})
	ls := links.New(links.Options{Media: ms, Pages: pages, Search: searcher, SearchPrice: config.Section[links.Config](d.cfg).Search.Price(),
		Bill: d.store, Log: log})
	gen, err := d.generation()
	if err != nil {
		return nil, nil, err
	}
	gen.Media, gen.Sending, gen.Groups, gen.GroupsDir, gen.Bill, gen.Log = ms, ss, d.groups, d.cfg.GroupsDir, d.store, log
	gs := generation.New(gen)
	host := mediahost.New(mediahost.Options{Media: ms, Links: ls, Generation: gs, Sending: ss, Groups: d.groups, Log: log})
	return host, gs, nil
}

// newHost is the IPC host of the groups that run, answering with h.
func (d *daemon) newHost(h tools.Handler, log *slog.Logger) *ipc.Host {
	var folders []string
	for _, g := range d.groups.All() {
		if _, off := d.groups.Disabled(g.Folder); !off {
			folders = append(folders, g.Folder)
		}
	}
	return ipc.NewHost(ipc.HostOptions{Root: d.ipcRoot(), Groups: folders, Handler: h, Types: tools.IPCTypes(), Log: log.With("component", "ipc")})
}

// cleanTemp removes the half-copied media a crash left in the groups'
// folders. Only the active instance does: a standby sharing groups_dir
// with it (docs/scaling.md) must not remove the files it is copying.
func (d *daemon) cleanTemp() {
	for _, g := range d.groups.All() {
		if _, off := d.groups.Disabled(g.Folder); off {
			continue
		}
		ws, err := groups.EnsureWorkspace(d.cfg.GroupsDir, g)
		if err == nil {
			err = ws.CleanTemp()
		}
		if err != nil {
			d.disable(g.Folder, err)
		}
	}
}

// disable leaves one group out whose folder was refused at start: its
// messages are stored but not answered until the folder is fixed and botd
// restarted; every other group runs. The error names the path.
func (d *daemon) disable(folder string, err error) {
	if _, off := d.groups.Disabled(folder); off {
		return
	}
	d.groups.Disable(folder, err.Error())
	d.log.Error("group disabled: its folder was refused at start; its messages are kept but not answered until it is fixed and botd restarted",
		"group", folder, "err", err)
}

// transcriber is media.transcription, or nil when it is not configured.
func (d *daemon) transcriber() (*transcribe.Transcriber, error) {
	t := config.Section[media.Config](d.cfg).Transcription
	if t.Provider == "" {
		d.log.Info("voice notes and audio will not be transcribed: media.transcription is not set")
		return nil, nil
	}
	p := d.cfg.LLM.Providers[t.Provider]
	tr, err := transcribe.New(transcribe.Options{Name: t.Provider, Type: p.Type, BaseURL: p.BaseURL, APIKey: p.APIKey, Model: t.Model,
		DB: d.store.DB, Log: d.log.With("component", "transcribe")})
	if err != nil {
		return nil, fail(1, "media.transcription: %v", err)
	}
	return tr, nil
}

func (d *daemon) startSweepers(ctx context.Context) {
	every := config.Section[media.Config](d.cfg).SweepInterval.D()
	d.wg.Add(3)
	go func() { defer d.wg.Done(); d.reg.RunSweeper(ctx, every, d.log) }()
	go func() { defer d.wg.Done(); d.cache.RunSweeper(ctx, every, d.log) }()
	go func() { defer d.wg.Done(); d.budget.Run(ctx, every) }()
	d.wg.Add(2)
	go func() { defer d.wg.Done(); d.cache.RunUploader(ctx, d.log.With("component", "media-store")) }()
	go func() {
		defer d.wg.Done()
		d.agent.RunRetention(ctx, config.Section[agent.Config](d.cfg).Retention.D(), time.Hour)
	}()
	d.wg.Add(2)
	go func() { defer d.wg.Done(); d.watchKept(ctx) }()
	go func() { defer d.wg.Done(); d.sweepPairing(ctx, time.Hour) }()
	d.wg.Add(1)
	go func() { defer d.wg.Done(); d.markChats(ctx) }()
	if d.uploads != nil {
		d.wg.Add(1)
		go func() { defer d.wg.Done(); d.uploads.Run(ctx, time.Hour, d.llm.filesAPIs) }()
	}
}

// startChannels connects every channel. A channel that cannot start fails
// the run with its own message (bad token: which setting to fix), except a
// logged-out account (channels.ErrLoggedOut) while other channels work:
// that one is reported and left off.
func (d *daemon) startChannels(ctx context.Context) error {
	for name, ch := range d.chans {
		// Start's ctx also bounds the background receiving, so it must be
		// the run's context; each channel bounds its own connect time.
		d.mon.Starting(name)
		err := ch.Start(ctx)
		d.mon.Started(name, err)
		if err == nil {
			d.log.Info("channel started", "channel", name)
			d.offerCommands(ctx, name, ch)
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, channels.ErrLoggedOut) && len(d.chans) > 1 {
			d.log.Error(name+" is not running; the other channels carry on", "err", err)
			delete(d.chans, name)
			continue
		}
		return fail(1, "%v", err)
	}
	return nil
}

// run starts everything and, once ctx ends, stops it in the order that
// loses nothing: intake first (channels stop receiving and are waited
// for, so every message they took is stored), then the agent's runs, then
// the IPC host and the sweepers, and the store last.
//
// Everything but the database waits for the lease (lease.go): a standby
// opens the database and waits; the active instance serves until ctx
// ends or the lease may be lost.
func (d *daemon) run(ctx context.Context) error {
	hup, stopHUP := notifyHUP()
	defer stopHUP()
	d.hup = hup
	lock, err := lockDataDir(d.cfg.DataDir, time.Now())
	if err != nil {
		return err
	}
	// Held until the process exits; closing it (or losing the last
	// reference to it) would let a second botd in.
	defer lock.Close()
	if err := d.open(ctx); err != nil {
		d.close()
		return fmt.Errorf("start: %w", err)
	}
	defer d.close()
	return d.whileActive(ctx, d.serve)
}

// serve runs the channels, the agent, the scheduler, the host and the
// sweepers until ctx ends, then stops them in order.
func (d *daemon) serve(ctx context.Context) error {
	hostCtx, stopHost := context.WithCancel(context.WithoutCancel(ctx))
	agentCtx, stopAgent := context.WithCancel(context.WithoutCancel(ctx))
	intakeCtx, stopIntake := context.WithCancel(ctx)
	// On a start-up failure too, in the same order as a shutdown (defers
	// run last first).
	defer stopHost()
	defer d.waitAgent()
	defer stopAgent()
	defer d.waitChannels()
	defer d.waitScheduler()
	defer stopIntake()
	d.cleanTemp()
	if err := d.startAgent(agentCtx); err != nil {
		return err
	}
	d.newScheduler()
	if err := d.buildChannels(); err != nil {
		return err
	}
	snap := maps.Clone(d.chans)
	d.chanSnap.Store(&snap)
	if err := d.startHost(hostCtx); err != nil {
		return err
	}
	d.startSweepers(hostCtx)
	if err := d.addChannelsToAgent(); err != nil {
		return err
	}
	// Channels first: the agent's recovery delivers answers left in the
	// outbox by a crash, which needs connected channels. Messages that
	// arrive before the agent starts are stored and picked up by its Start.
	if err := d.startChannels(intakeCtx); err != nil {
		return err
	}
	if err := d.agent.Start(agentCtx); err != nil {
		return err
	}
	if err := d.startScheduler(intakeCtx); err != nil {
		return err
	}
	// Video jobs send to the chats, so they resume once channels run.
	d.wg.Add(1)
	go func() { defer d.wg.Done(); d.videos.RunVideoJobs(hostCtx) }()
	d.startReload(intakeCtx)
	d.serving.Store(true)
	defer d.serving.Store(false)
	// Start is over: the init code of every linked package (networks not
	// enabled included) need not stay mapped.
	releaseStartPages(d.log)
	d.log.Info("botd running", "groups", len(d.groups.All()), "channels", len(d.chans), "data_dir", d.cfg.DataDir)
	<-ctx.Done()
	d.serving.Store(false)
	d.log.Info("shutting down")
	stopIntake()
	d.waitChannels()
	d.waitScheduler()
	stopAgent()
	d.waitAgent()
	stopHost()
	return nil
}

// waitChannels blocks until every channel that runs goroutines stopped.
func (d *daemon) waitChannels() {
	for _, ch := range d.chans {
		if w, ok := ch.(channels.Waiter); ok {
			w.Wait()
		}
	}
}
