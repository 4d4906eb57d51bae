package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/botd-dev/botd/access"
	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/atomicfile"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/generation"
)

// reloadSettle is how long the config's folder must be quiet after a
// change before the file is read: an editor's save (write a temporary
// file, rename it over the old one) and a ConfigMap's swap of its
// symlinks are several events; the file is read once, whole.
const reloadSettle = 300 * time.Millisecond

// liveKeys are the config's keys that a running botd takes up when it
// reads its file again (reload): the log level, the groups (added,
// removed, changed; those approved live stay), access, the reaction, the
// model chain and its providers, the agent's limits and a download's
// timeouts. Every other key needs a restart,
// and a reload names those that changed in one log line.
var liveKeys = []string{
	"log_level", "groups", "access", "ack_reaction",
	"llm.model", "llm.fallback", "llm.providers",
	"agent.max_cost_per_day", "agent.max_iterations", "agent.max_messages", "agent.run_timeout", "agent.context",
	"media.download_timeout", "media.download_idle_timeout",
}

// isLive reports whether the key path is at or below one of liveKeys.
func isLive(path string) bool {
	return slices.ContainsFunc(liveKeys, func(k string) bool { return keyUnder(path, k) })
}

// keyUnder reports whether the key path is key or one of its keys or
// entries.
func keyUnder(path, key string) bool {
	return path == key || strings.HasPrefix(path, key+".") || strings.HasPrefix(path, key+"[")
}

// mediaProviders are the providers of llm.providers the media services
// use: built once at start, so a change of theirs waits for a restart
// even though the model chain takes it at once.
func mediaProviders(cfg *config.Config) []string {
	m, g := config.Section[media.Config](cfg), config.Section[generation.Config](cfg)
	return []string{m.Transcription.Provider, m.Describe.Provider, g.Image.Provider,
		g.Speech.Provider, g.Video.Provider}
}

// plan is what a reload does with a config read again: the keys it puts
// in force, and those that wait for a restart.
type plan struct {
	live, restart []string
}

// planReload compares the config read (next) with the one in force
// (applied) for the keys a reload takes up, and with the one botd started
// with (started) for those it does not: such a change stays pending, and
// is named again at every reload, until botd restarts.
func planReload(started, applied, next *config.Config) plan {
	var p plan
	for _, k := range config.Changed(applied, next) {
		if isLive(k) {
			p.live = append(p.live, k)
		}
	}
	media := mediaProviders(started)
	for _, k := range config.Changed(started, next) {
		if !isLive(k) {
			p.restart = append(p.restart, k)
			continue
		}
		// A provider the media services use: the chain takes the new
		// values, the services keep those they started with.
		for _, name := range media {
			if name != "" && keyUnder(k, "llm.providers."+name) {
				p.restart = append(p.restart, k)
				break
			}
		}
	}
	return p
}

// touches reports whether a key of keys is at or below key.
func touches(keys []string, key string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { return keyUnder(k, key) })
}

// checkConfig is `botd config check` of the file at path, in this
// process: the same code path, so a reload is refused with the messages
// the command prints. ok is false when the check found problems;
// problems are the lines that list them.
func checkConfig(ctx context.Context, path string) (problems []string, ok bool) {
	var out bytes.Buffer
	err := cmdConfig(ctx, []string{"check", "--config", path}, &out, &out)
	if err == nil {
		return nil, true
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasSuffix(l, "problem(s)") {
			problems = append(problems, l)
		}
	}
	if msg := err.Error(); msg != "" {
		// Said by the command itself (the file unreadable).
		problems = append(problems, msg)
	}
	return problems, false
}

// reloadStatusName is the file in data_dir where `botd run` writes how
// its last reload went, for `botd reload` to report: key paths and
// config check's messages, never a value of the config.
const reloadStatusName = "reload.json"

// reloadStatus is how one reload went.
type reloadStatus struct {
	At      time.Time `json:"at"`
	Because string    `json:"because"`
	// Outcome is "reloaded", "unchanged" or "refused".
	Outcome  string   `json:"outcome"`
	Changed  []string `json:"changed,omitempty"`
	Restart  []string `json:"restart,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// reload reads the config file again and puts what can change live in
// force; why says what asked (a signal, a change of the file). A config
// with problems is refused, logged with config check's messages, and the
// running config stays. One reload at a time; each is logged and written
// to reloadStatusName.
func (d *daemon) reload(ctx context.Context, why string) {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	began := time.Now()
	st := d.reloadOnce(ctx)
	st.At, st.Because = time.Now().UTC(), why
	log := d.log.With("component", "reload", "config", d.cfgPath, "because", why, "took", time.Since(began).Round(time.Millisecond))
	switch {
	case st.Outcome == "refused":
		log.Error("config not reloaded: it has problems; the running config stays (botd config check lists them)",
			"problems", strings.Join(st.Problems, "; "))
	case len(st.Changed) > 0:
		log.Info("config reloaded", "changed", strings.Join(st.Changed, ", "))
	case len(st.Restart) == 0:
		log.Info("config read again: nothing changed")
	}
	if len(st.Restart) > 0 {
		log.Warn("config changes that need a restart; botd keeps running with the values it started with",
			"keys", strings.Join(st.Restart, ", "))
	}
	if b, err := json.Marshal(st); err == nil {
		if err := atomicfile.WriteFile(filepath.Join(d.cfg.DataDir, reloadStatusName), b, 0o640); err != nil {
			log.Warn("how the reload went was not written for botd reload", "err", err)
		}
	}
}

// reloadOnce is reload's work: check, read, compare, apply.
func (d *daemon) reloadOnce(ctx context.Context) reloadStatus {
	refused := func(problems ...string) reloadStatus { return reloadStatus{Outcome: "refused", Problems: problems} }
	data, err := os.ReadFile(d.cfgPath)
	if err != nil {
		return refused(err.Error())
	}
	if problems, ok := checkConfig(ctx, d.cfgPath); !ok {
		return refused(problems...)
	}
	// Read again for the values: the check read the file too, and one
	// that changed in between is checked here (Load validates).
	next, err := config.Load(d.cfgPath)
	var ps config.Problems
	if errors.As(err, &ps) {
		var lines []string
		for _, p := range ps {
			lines = append(lines, p.String())
		}
		return refused(lines...)
	}
	if err != nil {
		return refused(err.Error())
	}
	d.cfgSum = sha256.Sum256(data)
	p := planReload(d.cfg, d.live.Load(), next)
	if err := d.applyLive(next, p.live); err != nil {
		return refused(err.Error())
	}
	d.live.Store(next)
	st := reloadStatus{Outcome: "unchanged", Changed: p.live, Restart: p.restart}
	if len(p.live) > 0 {
		st.Outcome = "reloaded"
	}
	return st
}

// applyLive puts the changed keys (live, from planReload) of next in
// force. What can fail is done first (the new chain built, the groups
// replaced), so a failure changes nothing; then the agent's settings are
// swapped, the log level set, and the new groups' folders made.
func (d *daemon) applyLive(next *config.Config, live []string) error {
	agentKeys := slices.DeleteFunc(slices.Clone(live), func(k string) bool {
		return keyUnder(k, "groups") || keyUnder(k, "media") || k == "log_level"
	})
	var set *agent.Settings
	if len(agentKeys) > 0 {
		s, err := d.agentSettings(next, newLLMProviders(next, d.llmFiles()))
		if err != nil {
			return err
		}
		set = &s
	}
	was := map[string]bool{}
	for _, g := range d.groups.All() {
		was[g.Folder] = true
	}
	if touches(live, "groups") {
		// Triggers default to the name botd started with: assistant_name
		// needs a restart.
		left, err := d.groups.Replace(d.cfg.AssistantName, next.GroupList())
		if err != nil {
			return fmt.Errorf("groups: %w", err)
		}
		for _, k := range left {
			d.log.Warn("group approved live left out: the config now has its folder or chat", "group", k.Folder, "chat", k.Chat)
		}
	}
	if set != nil {
		d.agent.Apply(*set)
	}
	if touches(live, "access") && d.cmds != nil {
		d.cmds.Policy.SetAccess(*config.Section[access.Config](next)) // owners and per_sender_per_hour (chatctl)
	}
	if slices.Contains(live, "agent.max_cost_per_day") && d.videos != nil {
		// The same day's budget bounds the media the group makes.
		d.videos.SetMaxCostPerDay(set.MaxCostPerDay)
	}
	if touches(live, "media") && d.downloads != nil {
		d.downloads.SetTimeouts(media.Timeouts{Overall: config.Section[media.Config](next).DownloadTimeout.D(), Idle: config.Section[media.Config](next).DownloadIdleTimeout.D()})
	}
	if slices.Contains(live, "log_level") && d.logLevel != nil {
		var l slog.Level
		if err := l.UnmarshalText([]byte(next.LogLevel)); err == nil {
			d.logLevel.Set(l)
		}
	}
	if !touches(live, "groups") {
		return nil
	}
	for _, g := range d.groups.All() {
		if was[g.Folder] || g.Kept {
			continue
		}
		if _, err := groups.EnsureWorkspace(d.cfg.GroupsDir, g); err != nil {
			d.disable(g.Folder, err)
			continue
		}
		d.log.Info("group added by the config: answering there now", "group", g.Folder, "chat", g.Chat)
	}
	d.followGroups()
	// A group gone from the config may have been one a chat was
	// approved for: the groups approved live are looked at again.
	d.kickKept()
	return nil
}

// followFile makes path the config file a reload reads, and its bytes
// now the ones in force. `botd run` calls it with the file it loaded.
func (d *daemon) followFile(path string) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	d.cfgPath = path
	if data, err := os.ReadFile(path); err == nil {
		d.cfgSum = sha256.Sum256(data)
	}
}

// startReload starts taking up changes of the config (watchConfig) until
// ctx ends; the watch is in place when it returns, so a change made from
// then on is seen.
func (d *daemon) startReload(ctx context.Context) {
	if d.cfgPath == "" {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		d.log.Warn("config file not watched: reload it with SIGHUP (botd reload)", "err", err)
		w = nil
	} else {
		dirs := []string{filepath.Dir(d.cfgPath)}
		if real, err := filepath.EvalSymlinks(d.cfgPath); err == nil && filepath.Dir(real) != dirs[0] {
			dirs = append(dirs, filepath.Dir(real))
		}
		for _, dir := range dirs {
			if err := w.Add(dir); err != nil {
				d.log.Warn("config folder not watched: reload it with SIGHUP (botd reload)", "err", err)
			}
		}
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if w != nil {
			defer w.Close()
		}
		d.watchConfig(ctx, w, d.hup)
	}()
}

// watchConfig reloads the config on SIGHUP (hup) and when its file
// changes (w; nil: signals only), until ctx ends. The file's folder is
// watched (and, when the file is a link, its target's): an editor
// replaces the file by renaming another over it, a Kubernetes ConfigMap
// swaps a link to a folder; after reloadSettle of quiet the file is read,
// and reloaded if its bytes changed.
func (d *daemon) watchConfig(ctx context.Context, w *fsnotify.Watcher, hup <-chan os.Signal) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			d.reload(ctx, "SIGHUP")
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			settle.Reset(reloadSettle)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			d.log.Warn("config watch", "err", err)
		case <-settle.C:
			data, err := os.ReadFile(d.cfgPath)
			if err != nil {
				// Between a remove and a create; the next event reads it.
				continue
			}
			if sha256.Sum256(data) == d.cfgSum {
				continue
			}
			d.reload(ctx, "the file changed")
		}
	}
}

// newLevelLogger is newLogger whose level a reload can change (log_level).
func newLevelLogger(level string, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	lv := new(slog.LevelVar)
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	lv.Set(l)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv})), lv
}

// notifyHUP catches SIGHUP for the whole life of `botd run`: from the
// start its default (ending the process) never applies; a SIGHUP that
// comes before botd serves is taken up once it does.
func notifyHUP() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch, func() { signal.Stop(ch) }
}
