package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/botd-dev/botd/internal/atomicfile"
	"github.com/botd-dev/botd/internal/progress"
	"github.com/botd-dev/botd/internal/wake"
	"github.com/botd-dev/botd/tools"
)

// HostOptions configure a Host.
type HostOptions struct {
	Root string // data/ipc
	// Groups are the folders served, one per group.
	Groups []string
	// Handler answers each request; the group is the folder the request
	// was found in, never a field of it. A handler that takes a while
	// tells the waiting caller how it goes with progress.Report(ctx, …):
	// the host puts a reporter writing progress/<id>.json in ctx.
	Handler tools.Handler
	// Types are the request types accepted (tools.IPCTypes()); a request
	// of another type is quarantined unread by the handler.
	Types Types
	Log   *slog.Logger
	// MaxConcurrent bounds handlers across all groups (default 64);
	// PerGroup bounds one group (default 16) so one busy group cannot
	// starve the others. A handler that waits on something slow (a
	// download) holds its slot, so PerGroup is well above the number of
	// downloads a group runs at once: other requests of the group still
	// find a free slot.
	MaxConcurrent int
	PerGroup      int
	// Rescan is the safety-net interval for missed fsnotify events, and
	// the sweep's (default 5s).
	Rescan time.Duration
	// ResponseTTL removes responses nobody collected (default 10m).
	ResponseTTL time.Duration
}

// Host watches every group's requests/ folder and answers each request
// exactly once.
type Host struct {
	opts   HostOptions
	uid    int
	root   *os.Root // data/ipc, checked at Start
	rootID dirID
	global chan struct{}
	// gmu guards the served set, which changes while the host runs
	// (AddGroup, RemoveGroup): the loop takes a snapshot of it per scan.
	gmu    sync.Mutex
	groups []*group
	byDir  map[string]*group // requests dir path → group (fsnotify events)
	owner  map[dirID]string  // every served directory → its path: no two groups share one
	// retired are removed groups whose handlers may still answer through
	// their root; the sweep closes each once none is left.
	retired []*group
	watch   *fsnotify.Watcher // nil until Start, and again once stopped
	stopped bool
	mu      sync.Mutex
	working map[string]bool     // "<group>/<file>" being handled
	live    map[string]*tracker // "<group>/<id>" → its progress
	// disabled are the groups whose folders Start or AddGroup refused
	// (guarded by gmu).
	disabled map[string]error
	// handlers counts handler goroutines; wg the watcher, which waits for
	// handlers before it closes the folders.
	handlers sync.WaitGroup
	wg       sync.WaitGroup
	kick     wake.Signal
}

// group is one served folder, data/ipc/<name>, opened as an os.Root: every
// file operation goes through it, so nothing can lead outside the folder.
type group struct {
	name    string
	path    string // data/ipc/<name>, for messages and the watch
	root    *os.Root
	ids     map[string]dirID // "." and each subfolder, as checked at Start
	sem     chan struct{}
	refused atomic.Bool
	removed atomic.Bool  // RemoveGroup: no longer served
	busy    atomic.Int64 // handler goroutines of the group

	failedMu    sync.Mutex
	failedN     int
	failedBytes int64
}

// NewHost returns a host; nothing happens until Start.
func NewHost(o HostOptions) *Host {
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 64
	}
	if o.PerGroup <= 0 {
		o.PerGroup = 16
	}
	if o.Rescan <= 0 {
		o.Rescan = 5 * time.Second
	}
	if o.ResponseTTL <= 0 {
		o.ResponseTTL = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Host{opts: o, uid: os.Getuid(), byDir: map[string]*group{}, disabled: map[string]error{}, global: make(chan struct{}, o.MaxConcurrent),
		working: map[string]bool{}, live: map[string]*tracker{}, kick: wake.New()}
}

// Start creates and checks the folders, settles what a previous run left
// in processing/, handles what is already waiting, and watches until ctx
// ends. A group folder that is a symlink, belongs to another user, or is
// the same directory as another group's leaves that group out (Disabled
// says why, with the path); a bad data/ipc itself fails Start. Wait blocks
// until in-flight handlers finished.
func (h *Host) Start(ctx context.Context) error {
	if len(h.opts.Types) == 0 {
		return errors.New("ipc host: no request types (HostOptions.Types)")
	}
	if err := h.open(); err != nil {
		h.close()
		return fmt.Errorf("ipc host: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		h.close()
		return fmt.Errorf("ipc host: %w", err)
	}
	h.gmu.Lock()
	h.watch = w
	for _, g := range h.groups {
		h.begin(g)
	}
	h.gmu.Unlock()
	h.scan(ctx)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.loop(ctx, w)
		h.gmu.Lock()
		h.stopped, h.watch = true, nil
		h.gmu.Unlock()
		w.Close()
		h.handlers.Wait()
		h.close()
	}()
	return nil
}

// begin settles what a previous run left in g's folders and watches its
// requests/; called with gmu held, at Start and by AddGroup.
func (h *Host) begin(g *group) {
	h.settle(g)
	h.clearProgress(g)
	h.pruneFailed(g)
	dir := filepath.Join(g.path, dirRequests)
	h.byDir[dir] = g
	if err := h.watch.Add(dir); err != nil {
		// The rescan still serves this group, only slower.
		h.opts.Log.Warn("ipc: cannot watch folder, relying on rescans", "dir", dir, "err", err)
	}
}

// AddGroup serves one more group folder while the host runs (a group
// approved or added to the config live). Its folder is made and checked
// as at Start — a plain name, a real directory of botd's user, not a
// symlink, not the same directory as another group's — and a refusal is
// returned (and listed by Disabled) with the reason; the host and the
// other groups go on. What waits in the folder is handled as at Start.
// Adding a group already served does nothing.
func (h *Host) AddGroup(name string) error {
	if !validFolder(name) {
		return fmt.Errorf("ipc host: group folder %q is not a plain folder name", name)
	}
	h.gmu.Lock()
	defer h.gmu.Unlock()
	if h.watch == nil || h.stopped {
		return errors.New("ipc host: not running")
	}
	for _, g := range h.groups {
		if g.name == name {
			return nil
		}
	}
	if err := h.openGroup(name, h.claim); err != nil {
		h.opts.Log.Error("ipc: group folder refused; the group is disabled", "group", name, "err", err)
		h.disabled[name] = err
		return fmt.Errorf("ipc host: %w", err)
	}
	delete(h.disabled, name)
	h.begin(h.groups[len(h.groups)-1])
	h.opts.Log.Info("ipc: serving a group added while botd runs", "group", name)
	h.kick.Wake()
	return nil
}

// RemoveGroup stops serving a group (removed while botd runs). A request
// a handler already claimed is finished and answered; every request still
// waiting in requests/ is answered forbidden ("no longer served"), so no
// caller is left waiting for nothing; a request written after this is
// never read (the caller times out). The folder stays on disk. Removing a
// group not served does nothing.
func (h *Host) RemoveGroup(name string) {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	if h.stopped {
		return // stopping: close() closes every folder, as at shutdown
	}
	i := slices.IndexFunc(h.groups, func(g *group) bool { return g.name == name })
	if i < 0 {
		delete(h.disabled, name)
		return
	}
	g := h.groups[i]
	h.groups = slices.Delete(h.groups, i, i+1)
	g.removed.Store(true)
	dir := filepath.Join(g.path, dirRequests)
	delete(h.byDir, dir)
	if h.watch != nil {
		h.watch.Remove(dir)
	}
	for _, id := range g.ids {
		delete(h.owner, id)
	}
	h.drain(g)
	h.retired = append(h.retired, g)
	h.opts.Log.Info("ipc: group no longer served: it was removed while botd ran", "group", name)
}

// drain answers every request waiting in a removed group's requests/.
// The rename is the claim, as in handle: a handler that claimed first
// answers its request itself.
func (h *Host) drain(g *group) {
	names, _ := readNames(g.root, dirRequests)
	for _, name := range names {
		id := strings.TrimSuffix(name, ".json")
		if !strings.HasSuffix(name, ".json") || !ValidID(id) {
			continue
		}
		rel := dirProcessing + "/" + name
		if err := g.root.Rename(dirRequests+"/"+name, rel); err != nil {
			continue
		}
		herr := tools.Errorf(tools.CodeForbidden, "the group %q is no longer served by botd (it was removed); not carried out", g.name)
		if err := h.respond(g, &Response{Version: Version, ID: id, Error: herr}); err != nil {
			h.opts.Log.Error("ipc: cannot answer a request of a removed group", "group", g.name, "id", id, "err", err)
			continue
		}
		g.root.Remove(rel)
	}
}

// served is a snapshot of the groups served now.
func (h *Host) served() []*group {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	return slices.Clone(h.groups)
}

// claim records id as path's; a directory already another group's is
// refused.
func (h *Host) claim(id dirID, path string) error {
	if other, ok := h.owner[id]; ok {
		return fmt.Errorf("%s is the same directory as %s; two groups can never share an IPC directory. "+
			"Remove (or unmount) %s and restart", path, other, path)
	}
	h.owner[id] = path
	return nil
}

// open creates data/ipc and each group's folders without following a
// symlink, checks them, and opens them as roots.
func (h *Host) open() error {
	seen := map[string]bool{}
	for _, g := range h.opts.Groups {
		if !validFolder(g) {
			return fmt.Errorf("group folder %q is not a plain folder name", g)
		}
		if seen[g] {
			return fmt.Errorf("group folder %q is listed twice", g)
		}
		seen[g] = true
	}
	rootPath := h.opts.Root
	if err := os.MkdirAll(filepath.Dir(rootPath), 0o750); err != nil {
		return err
	}
	id, err := makeDir(hostDirs{}, rootPath, rootPath, h.uid)
	if err != nil {
		return err
	}
	r, err := os.OpenRoot(rootPath)
	if err != nil {
		return err
	}
	h.root, h.rootID = r, id
	if err := sameAs(r, rootPath, id); err != nil {
		return err
	}
	h.gmu.Lock()
	defer h.gmu.Unlock()
	h.owner = map[dirID]string{id: rootPath}
	for _, name := range h.opts.Groups {
		if err := h.openGroup(name, h.claim); err != nil {
			// One group's folder is that group's problem: the others are
			// served, this one is reported and left out.
			h.opts.Log.Error("ipc: group folder refused; the group is disabled", "group", name, "err", err)
			h.disabled[name] = err
		}
	}
	return nil
}

// dirMaker is where open makes folders: an os.Root, or hostDirs for the
// host's own paths.
type dirMaker interface {
	Mkdir(name string, perm fs.FileMode) error
	Lstat(name string) (fs.FileInfo, error)
}

type hostDirs struct{}

func (hostDirs) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }
func (hostDirs) Lstat(name string) (fs.FileInfo, error)    { return os.Lstat(name) }

// makeDir creates name in d unless it is there and checks that it is a
// real directory (not a symlink) of uid; path is what errors call it.
func makeDir(d dirMaker, name, path string, uid int) (dirID, error) {
	if err := mkdir(d.Mkdir(name, 0o750)); err != nil {
		return dirID{}, err
	}
	fi, err := d.Lstat(name)
	return checkDir(path, fi, err, uid)
}

// Disabled lists the groups whose folders Start or AddGroup refused, with
// the reason (a copy).
func (h *Host) Disabled() map[string]error {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	return maps.Clone(h.disabled)
}

// Groups lists the folders served now.
func (h *Host) Groups() []string {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	out := make([]string, len(h.groups))
	for i, g := range h.groups {
		out[i] = g.name
	}
	return out
}

func (h *Host) openGroup(name string, claim func(dirID, string) error) error {
	gpath := filepath.Join(h.opts.Root, name)
	gid, err := makeDir(h.root, name, gpath, h.uid)
	if err != nil {
		return err
	}
	if err := claim(gid, gpath); err != nil {
		return err
	}
	gr, err := h.root.OpenRoot(name)
	if err != nil {
		return err
	}
	g := &group{name: name, path: gpath, root: gr, ids: map[string]dirID{".": gid}, sem: make(chan struct{}, h.opts.PerGroup)}
	ok := false
	defer func() {
		if !ok {
			gr.Close()
		}
	}()
	if err := sameAs(gr, gpath, gid); err != nil {
		return err
	}
	for _, sub := range subdirs {
		spath := filepath.Join(gpath, sub)
		sid, err := makeDir(gr, sub, spath, h.uid)
		if err != nil {
			return err
		}
		if err := claim(sid, spath); err != nil {
			return err
		}
		g.ids[sub] = sid
	}
	ok = true
	h.groups = append(h.groups, g)
	return nil
}

func (h *Host) close() {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	for _, g := range h.groups {
		g.root.Close()
	}
	for _, g := range h.retired {
		g.root.Close()
	}
	h.retired = nil
	if h.root != nil {
		h.root.Close()
	}
}

// check re-checks a group's folders against what Start found.
func (h *Host) check(g *group) error {
	fi, err := os.Lstat(h.opts.Root)
	if id, err := checkDir(h.opts.Root, fi, err, h.uid); err != nil {
		return err
	} else if id != h.rootID {
		return fmt.Errorf("%s is not the directory botd created (it was replaced while botd ran). Restart botd", h.opts.Root)
	}
	fi, err = h.root.Lstat(g.name)
	if id, err := checkDir(g.path, fi, err, h.uid); err != nil {
		return err
	} else if id != g.ids["."] {
		return fmt.Errorf("%s is not the directory botd created (it was replaced while botd ran). Remove it and restart", g.path)
	}
	for _, sub := range subdirs {
		spath := filepath.Join(g.path, sub)
		fi, err := g.root.Lstat(sub)
		if id, err := checkDir(spath, fi, err, h.uid); err != nil {
			return err
		} else if id != g.ids[sub] {
			return fmt.Errorf("%s is not the directory botd created (it was replaced while botd ran). Remove it and restart", spath)
		}
	}
	return nil
}

// serving re-checks g and reports whether it is still served. A group
// whose folders changed is refused until restart, said once at Error.
func (h *Host) serving(g *group) bool {
	if g.removed.Load() || g.refused.Load() {
		return false
	}
	if err := h.check(g); err != nil {
		if g.refused.CompareAndSwap(false, true) {
			h.opts.Log.Error("ipc: group no longer served until botd restarts: its IPC folder changed", "group", g.name, "err", err)
		}
		return false
	}
	return true
}

// Wait blocks until the watcher stopped and every handler returned.
func (h *Host) Wait() { h.wg.Wait() }

// Rescan asks for an immediate scan (tests, and SIGHUP-like pokes).
func (h *Host) Rescan() { h.kick.Wake() }

func (h *Host) loop(ctx context.Context, w *fsnotify.Watcher) {
	t := time.NewTicker(h.opts.Rescan)
	defer t.Stop()
	pt := time.NewTicker(progressEvery)
	defer pt.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Op&(fsnotify.Create|fsnotify.Rename|fsnotify.Write) == 0 {
				continue
			}
			h.gmu.Lock()
			g, ok := h.byDir[filepath.Dir(ev.Name)]
			h.gmu.Unlock()
			if ok {
				h.consider(ctx, g, filepath.Base(ev.Name))
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				h.opts.Log.Warn("ipc: inotify queue overflowed, rescanning")
			} else {
				h.opts.Log.Warn("ipc: watch error, rescanning", "err", err)
			}
			h.scan(ctx)
		case <-t.C:
			h.scan(ctx)
			h.sweep()
		case now := <-pt.C:
			h.mu.Lock()
			live := make([]*tracker, 0, len(h.live))
			for _, t := range h.live {
				live = append(live, t)
			}
			h.mu.Unlock()
			for _, t := range live {
				t.tick(now)
			}
		case <-h.kick.C():
			h.scan(ctx)
		}
	}
}

func (h *Host) scan(ctx context.Context) {
	for _, g := range h.served() {
		if !h.serving(g) {
			continue
		}
		names, err := readNames(g.root, dirRequests)
		if err != nil {
			h.opts.Log.Warn("ipc: cannot read requests", "group", g.name, "err", err)
			continue
		}
		for _, name := range names {
			h.consider(ctx, g, name)
		}
	}
}

// sweep removes what nobody will collect: answers older than ResponseTTL,
// progress of requests no longer live, writers' temp files, and keeps
// failed/ within its bounds.
func (h *Host) sweep() {
	h.closeRetired()
	cutoff := time.Now().Add(-h.opts.ResponseTTL)
	for _, g := range h.served() {
		if !h.serving(g) {
			continue
		}
		h.removeOlder(g, dirResponses, cutoff, func(string) bool { return true })
		h.removeOlder(g, dirProgress, time.Now().Add(-progressFresh), func(name string) bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.live[g.name+"/"+strings.TrimSuffix(name, ".json")] == nil
		})
		h.removeOlder(g, ".", cutoff, func(name string) bool { return strings.HasPrefix(name, ".tmp-") })
		h.pruneFailed(g)
	}
}

// closeRetired closes the roots of removed groups no handler uses any
// more. It runs on the loop, the only goroutine that starts handlers, so
// none can start between the count and the close.
func (h *Host) closeRetired() {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	h.retired = slices.DeleteFunc(h.retired, func(g *group) bool {
		if g.busy.Load() > 0 {
			return false
		}
		g.root.Close()
		return true
	})
}

func (h *Host) removeOlder(g *group, dir string, cutoff time.Time, ok func(name string) bool) {
	names, _ := readNames(g.root, dir)
	for _, name := range names {
		rel := dir + "/" + name
		if fi, err := g.root.Lstat(rel); err == nil && !fi.IsDir() && fi.ModTime().Before(cutoff) && ok(name) {
			g.root.Remove(rel)
		}
	}
}

// clearProgress removes progress files of a previous run: nothing is live
// at Start.
func (h *Host) clearProgress(g *group) {
	names, _ := readNames(g.root, dirProgress)
	for _, name := range names {
		g.root.Remove(dirProgress + "/" + name)
	}
}

// settle deals with what a previous run left in processing/ (it was
// stopped or killed while handling them): a fetch or a list goes back to
// requests/ and is carried out again (if not expired by then); a send is
// answered send_unknown, never repeated.
func (h *Host) settle(g *group) {
	names, err := readNames(g.root, dirProcessing)
	if err != nil {
		h.opts.Log.Warn("ipc: cannot read processing/", "group", g.name, "err", err)
		return
	}
	for _, name := range names {
		rel := dirProcessing + "/" + name
		id := strings.TrimSuffix(name, ".json")
		if !strings.HasSuffix(name, ".json") || !ValidID(id) {
			h.quarantine(g, dirProcessing, name, "", "file name is not <id>.json with a plain id")
			continue
		}
		if _, err := g.root.Lstat(dirResponses + "/" + name); err == nil {
			g.root.Remove(rel) // answered just before the stop
			continue
		}
		req, _, reason := readRequest(g.root, rel, id, h.opts.Types)
		if reason != "" {
			h.quarantine(g, dirProcessing, name, id, reason)
			continue
		}
		if req == nil {
			continue
		}
		if h.opts.Types.Repeatable(req.Type) {
			if err := g.root.Rename(rel, dirRequests+"/"+name); err != nil {
				h.opts.Log.Error("ipc: cannot requeue an interrupted request", "group", g.name, "id", id, "err", err)
			} else {
				h.opts.Log.Info("ipc: carrying out again a request interrupted by a stop", "group", g.name, "type", req.Type, "id", id)
			}
			continue
		}
		herr := tools.Errorf(tools.CodeSendUnknown, "botd stopped while sending this (request written at %s); it may or may not have "+
			"reached the chat — check the chat before sending again", stamp(req.Created))
		if err := h.respond(g, &Response{Version: Version, ID: id, Error: herr}); err != nil {
			h.opts.Log.Error("ipc: cannot answer an interrupted send", "group", g.name, "id", id, "err", err)
			continue
		}
		g.root.Remove(rel)
		h.opts.Log.Warn("ipc: a send was interrupted by a stop; answered send_unknown, not sent again", "group", g.name, "type", req.Type, "id", id)
	}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

// consider validates one file in requests/ and, if it is a request,
// hands it to a handler goroutine. Anything else is quarantined.
func (h *Host) consider(ctx context.Context, g *group, name string) {
	if strings.HasPrefix(name, ".") {
		return // a writer's temp file (should not be here, but harmless)
	}
	key := g.name + "/" + name
	h.mu.Lock()
	if h.working[key] {
		h.mu.Unlock()
		return
	}
	h.working[key] = true
	h.mu.Unlock()
	release := func() {
		h.mu.Lock()
		delete(h.working, key)
		h.mu.Unlock()
	}
	if !h.serving(g) {
		release()
		return
	}
	rel := dirRequests + "/" + name
	id := strings.TrimSuffix(name, ".json")
	if !strings.HasSuffix(name, ".json") || !ValidID(id) {
		h.quarantine(g, dirRequests, name, "", "file name is not <id>.json with a plain id")
		release()
		return
	}
	// Answered before a crash but not yet removed: done, just tidy up.
	if _, err := g.root.Lstat(dirResponses + "/" + name); err == nil {
		g.root.Remove(rel)
		release()
		return
	}
	req, fi, reason := readRequest(g.root, rel, id, h.opts.Types)
	if reason != "" && strings.HasPrefix(reason, "malformed JSON") && !strings.Contains(reason, "unknown field") &&
		fi != nil && time.Since(fi.ModTime()) < writeGrace {
		// A writer that does not rename into place may still be writing;
		// look again on its next event or the next rescan.
		release()
		return
	}
	if reason != "" {
		h.quarantine(g, dirRequests, name, id, reason)
		release()
		return
	}
	if req == nil { // vanished: the client withdrew it
		release()
		return
	}
	if why := expired(req, fi.ModTime(), time.Now()); why != "" {
		h.answerExpired(g, rel, req, why)
		release()
		return
	}
	h.handlers.Add(1)
	g.busy.Add(1)
	go func() {
		defer h.handlers.Done()
		defer g.busy.Add(-1)
		defer release()
		h.handle(ctx, g, name, req)
	}()
}

// writeGrace is how long a half-written request gets before it is judged.
const writeGrace = time.Second

// expired says why req (its file last written at mtime) is too old to be
// carried out, or "".
func expired(req *Request, mtime, now time.Time) string {
	age := shortDuration(MaxRequestAge)
	if !req.Created.IsZero() {
		if req.Created.After(now.Add(MaxClockSkew)) {
			return fmt.Sprintf("request written at %s, more than %s in the future", stamp(req.Created), shortDuration(MaxClockSkew))
		}
		if now.Sub(req.Created) > MaxRequestAge {
			return fmt.Sprintf("request written at %s, older than %s", stamp(req.Created), age)
		}
	}
	if now.Sub(mtime) > MaxRequestAge {
		return fmt.Sprintf("request file written at %s, older than %s", stamp(mtime), age)
	}
	return ""
}

// shortDuration: "10m", "1h", "90s".
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func (h *Host) answerExpired(g *group, rel string, req *Request, why string) {
	err := h.respond(g, &Response{Version: Version, ID: req.ID, Error: tools.Errorf(tools.CodeExpired, "%s; not carried out", why)})
	if err != nil {
		h.opts.Log.Error("ipc: cannot answer an expired request", "group", g.name, "id", req.ID, "err", err)
	}
	g.root.Remove(rel)
	h.opts.Log.Warn("ipc: expired request not carried out", "group", g.name, "type", req.Type, "id", req.ID, "why", why)
}

// readRequest returns the request at rel inside r and its file's info, or
// why the file is not one. (nil, nil, "") means the file disappeared.
func readRequest(r *os.Root, rel, id string, types Types) (*Request, fs.FileInfo, string) {
	fi, err := r.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ""
	}
	if err != nil {
		return nil, nil, "cannot stat: " + err.Error()
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, "not a regular file (symlinks and folders are refused)"
	}
	if fi.Size() > MaxRequestBytes {
		return nil, fi, fmt.Sprintf("request file is %d bytes, over the %d byte limit", fi.Size(), MaxRequestBytes)
	}
	// O_NONBLOCK: if the file was swapped for a FIFO after the Lstat, the
	// open must not block the scan loop that serves every group.
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ""
	}
	if err != nil {
		return nil, fi, "cannot open: " + err.Error()
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !ofi.Mode().IsRegular() || !os.SameFile(fi, ofi) {
		return nil, fi, "not a regular file (symlinks and folders are refused)"
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxRequestBytes+1))
	if err != nil {
		return nil, fi, "cannot read: " + err.Error()
	}
	req, reason := DecodeRequest(b, id, types)
	return req, fi, reason
}

// DecodeRequest parses a request file's bytes for the request named id,
// or says why they are not a request botd will act on (one of types).
func DecodeRequest(b []byte, id string, types Types) (*Request, string) {
	if len(b) > MaxRequestBytes {
		return nil, fmt.Sprintf("request file is over the %d byte limit", MaxRequestBytes)
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, "malformed JSON: " + err.Error()
	}
	if dec.More() {
		return nil, "malformed JSON: trailing data after the request"
	}
	switch {
	case req.Version != Version:
		return nil, fmt.Sprintf("unsupported protocol version %d (host speaks %d)", req.Version, Version)
	case req.ID != id:
		return nil, fmt.Sprintf("id %q does not match the file name", req.ID)
	}
	if !types.Known(req.Type) {
		return nil, fmt.Sprintf("unknown request type %q", req.Type)
	}
	return &req, ""
}

func (h *Host) respond(g *group, r *Response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeAtomicRoot(g.root, dirResponses, r.ID+".json", b, true)
}

// acquire takes a slot of sem, saying "queued" while it has to wait.
func acquire(ctx context.Context, sem chan struct{}, t *tracker) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	t.set(progress.Progress{State: progress.Queued})
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (h *Host) handle(ctx context.Context, g *group, name string, req *Request) {
	key := g.name + "/" + req.ID
	t := &tracker{h: h, g: g, id: req.ID, typ: req.Type, since: time.Now()}
	h.mu.Lock()
	h.live[key] = t
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.live, key)
		h.mu.Unlock()
		t.finish()
	}()
	if !acquire(ctx, g.sem, t) {
		return
	}
	defer func() { <-g.sem }()
	if !acquire(ctx, h.global, t) {
		return
	}
	defer func() { <-h.global }()
	if !h.serving(g) {
		return
	}

	// Claim: from here on the request is the host's, and survives a crash
	// in processing/. A client that withdrew it meanwhile wins.
	rel := dirProcessing + "/" + name
	if err := g.root.Rename(dirRequests+"/"+name, rel); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			h.opts.Log.Error("ipc: cannot claim a request", "group", g.name, "id", req.ID, "err", err)
		}
		return
	}
	if !h.opts.Types.Repeatable(req.Type) {
		// A send must not be repeated after a power cut: the claim is on
		// disk before anything goes out.
		atomicfile.SyncDir(g.root, dirProcessing)
		atomicfile.SyncDir(g.root, dirRequests)
	}
	// Judge the claimed bytes, not the ones read before the claim; time
	// may also have passed in the queue.
	req, fi, reason := readRequest(g.root, rel, req.ID, h.opts.Types)
	if reason != "" {
		h.quarantine(g, dirProcessing, name, strings.TrimSuffix(name, ".json"), reason)
		return
	}
	if req == nil {
		return
	}
	if why := expired(req, fi.ModTime(), time.Now()); why != "" {
		h.answerExpired(g, rel, req, why)
		return
	}
	t.claim()

	start := time.Now()
	result, herr := h.safeHandle(progress.With(ctx, t.set), g.name, req)
	if ctx.Err() != nil && herr != nil {
		// Stopping, and the handler gave up. A fetch or list stays in
		// processing/ and is carried out again at the next start; a send
		// may have gone out, so the caller hears that it is unknown.
		if h.opts.Types.Repeatable(req.Type) {
			h.opts.Log.Info("ipc: request interrupted by the stop; carried out again at the next start", "group", g.name, "type", req.Type, "id", req.ID)
			return
		}
		if !definite(herr.Code) {
			herr = tools.Errorf(tools.CodeSendUnknown, "botd was stopping while sending this (%s); it may or may not have reached the chat — "+
				"check the chat before sending again", herr.Message)
		}
	}
	resp := &Response{Version: Version, ID: req.ID, OK: herr == nil, Error: herr}
	if herr == nil && result != nil {
		b, err := json.Marshal(result)
		if err != nil {
			resp.OK, resp.Error = false, tools.Errorf(tools.CodeInternal, "cannot encode result: %v", err)
		} else {
			resp.Result = b
		}
	}
	if err := h.respond(g, resp); err != nil {
		// Left in processing/: a fetch is carried out again at the next
		// start, a send answered send_unknown.
		h.opts.Log.Error("ipc: cannot write response", "group", g.name, "type", req.Type, "id", req.ID, "ok", resp.OK, "err", err)
		return
	}
	g.root.Remove(rel)
	attrs := []any{"group", g.name, "type", req.Type, "id", req.ID, "took", time.Since(start).Round(time.Microsecond)}
	if resp.Error != nil {
		h.opts.Log.Info("ipc: request failed", append(attrs, "code", resp.Error.Code, "msg", resp.Error.Message)...)
	} else {
		h.opts.Log.Debug("ipc: request done", attrs...)
	}
}

// definite reports whether a failed send's code means nothing went out
// (refused before sending), whatever happened to the context.
func definite(code string) bool {
	switch code {
	case tools.CodeBadRequest, tools.CodeForbidden, tools.CodeNotFound, tools.CodeTooLarge, tools.CodeExpired:
		return true
	}
	return false
}

func (h *Host) safeHandle(ctx context.Context, g string, req *Request) (result any, herr *tools.Error) {
	defer func() {
		if p := recover(); p != nil {
			h.opts.Log.Error("ipc: handler panicked", "group", g, "type", req.Type, "panic", p)
			result, herr = nil, tools.Errorf(tools.CodeInternal, "the host failed handling %s", req.Type)
			if !h.opts.Types.Repeatable(req.Type) {
				herr = tools.Errorf(tools.CodeSendUnknown, "botd failed while sending this; it may or may not have reached the chat — "+
					"check the chat before sending again")
			}
		}
	}()
	return h.opts.Handler.Handle(ctx, g, &tools.Request{ID: req.ID, Type: req.Type, Args: req.Args})
}
