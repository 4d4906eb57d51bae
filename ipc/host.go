package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Handler answers one request of a group. The group is the folder the
// request was found in, never a field of the request.
type Handler interface {
	Handle(ctx context.Context, group string, req *Request) (result any, err *Error)
}

// HostOptions configure a Host.
type HostOptions struct {
	Root string // data/ipc
	// Groups are the folders served, one per group.
	Groups  []string
	Handler Handler
	Log     *slog.Logger
	// MaxConcurrent bounds handlers across all groups (default 16);
	// PerGroup bounds one group (default 4) so one busy group cannot starve
	// the others.
	MaxConcurrent int
	PerGroup      int
	// Rescan is the safety-net interval for missed fsnotify events
	// (default 5s).
	Rescan time.Duration
	// ResponseTTL removes responses nobody collected (default 10m).
	ResponseTTL time.Duration
}

// Host watches every group's requests/ folder and answers each request
// exactly once.
type Host struct {
	opts    HostOptions
	byDir   map[string]string // requests dir → group folder
	global  chan struct{}
	perGrp  map[string]chan struct{}
	mu      sync.Mutex
	working map[string]bool // request paths being handled
	wg      sync.WaitGroup
	kick    chan struct{}
}

// NewHost returns a host; nothing happens until Start.
func NewHost(o HostOptions) *Host {
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 16
	}
	if o.PerGroup <= 0 {
		o.PerGroup = 4
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
	return &Host{opts: o, byDir: map[string]string{}, perGrp: map[string]chan struct{}{},
		global: make(chan struct{}, o.MaxConcurrent), working: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// Start creates the folders, handles what is already waiting, and watches
// until ctx ends. Wait blocks until in-flight handlers finished.
func (h *Host) Start(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("ipc host: %w", err)
	}
	for _, g := range h.opts.Groups {
		l := GroupLayout(h.opts.Root, g)
		if err := l.Ensure(); err != nil {
			w.Close()
			return err
		}
		dir := l.Requests()
		h.byDir[dir] = g
		h.perGrp[g] = make(chan struct{}, h.opts.PerGroup)
		if err := w.Add(dir); err != nil {
			// The rescan still serves this group, only slower.
			h.opts.Log.Warn("ipc: cannot watch folder, relying on rescans", "dir", dir, "err", err)
		}
	}
	h.scan(ctx)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer w.Close()
		h.loop(ctx, w)
	}()
	return nil
}

// Wait blocks until the watcher stopped and every handler returned.
func (h *Host) Wait() { h.wg.Wait() }

// Rescan asks for an immediate scan (tests, and SIGHUP-like pokes).
func (h *Host) Rescan() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

func (h *Host) loop(ctx context.Context, w *fsnotify.Watcher) {
	t := time.NewTicker(h.opts.Rescan)
	defer t.Stop()
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
			if g, ok := h.byDir[filepath.Dir(ev.Name)]; ok {
				h.consider(ctx, g, ev.Name)
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
			h.pruneResponses()
		case <-h.kick:
			h.scan(ctx)
		}
	}
}

func (h *Host) scan(ctx context.Context) {
	for dir, g := range h.byDir {
		entries, err := os.ReadDir(dir)
		if err != nil {
			h.opts.Log.Warn("ipc: cannot read requests", "dir", dir, "err", err)
			continue
		}
		for _, e := range entries {
			h.consider(ctx, g, filepath.Join(dir, e.Name()))
		}
	}
}

// pruneResponses removes answers no client collected (it gave up).
func (h *Host) pruneResponses() {
	cutoff := time.Now().Add(-h.opts.ResponseTTL)
	for _, g := range h.opts.Groups {
		dir := GroupLayout(h.opts.Root, g).Responses()
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// consider validates one file in requests/ and, if it is a request,
// hands it to a handler goroutine. Anything else is quarantined.
func (h *Host) consider(ctx context.Context, g string, path string) {
	name := filepath.Base(path)
	if strings.HasPrefix(name, ".") {
		return // a writer's temp file (should not be here, but harmless)
	}
	h.mu.Lock()
	if h.working[path] {
		h.mu.Unlock()
		return
	}
	h.working[path] = true
	h.mu.Unlock()
	release := func() {
		h.mu.Lock()
		delete(h.working, path)
		h.mu.Unlock()
	}
	l := GroupLayout(h.opts.Root, g)
	id := strings.TrimSuffix(name, ".json")
	if !strings.HasSuffix(name, ".json") || !ValidID(id) {
		h.quarantine(l, path, "", "file name is not <id>.json with a plain id")
		release()
		return
	}
	// Answered before a crash but not yet removed: done, just tidy up.
	if _, err := os.Stat(filepath.Join(l.Responses(), name)); err == nil {
		os.Remove(path)
		release()
		return
	}
	req, reason := readRequest(path, id)
	if reason != "" && strings.HasPrefix(reason, "malformed JSON") && !strings.Contains(reason, "unknown field") && recentlyWritten(path) {
		// A writer that does not rename into place may still be writing;
		// look again on its next event or the next rescan.
		release()
		return
	}
	if reason != "" {
		h.quarantine(l, path, id, reason)
		release()
		return
	}
	if req == nil { // vanished: the client withdrew it
		release()
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer release()
		h.handle(ctx, g, l, path, req)
	}()
}

// writeGrace is how long a half-written request gets before it is judged.
const writeGrace = time.Second

func recentlyWritten(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && time.Since(fi.ModTime()) < writeGrace
}

// readRequest returns the request, or why the file is not one. (nil, "")
// means the file disappeared.
func readRequest(path, id string) (*Request, string) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, "cannot stat: " + err.Error()
	}
	if !fi.Mode().IsRegular() {
		return nil, "not a regular file (symlinks and folders are refused)"
	}
	if fi.Size() > MaxRequestBytes {
		return nil, fmt.Sprintf("request file is %d bytes, over the %d byte limit", fi.Size(), MaxRequestBytes)
	}
	// O_NONBLOCK: if the file was swapped for a FIFO after the Lstat, the
	// open must not block the scan loop that serves every group.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, "cannot open: " + err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, "not a regular file (symlinks and folders are refused)"
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxRequestBytes+1))
	if err != nil {
		return nil, "cannot read: " + err.Error()
	}
	return DecodeRequest(b, id)
}

// DecodeRequest parses a request file's bytes for the request named id,
// or says why they are not a request botd will act on.
func DecodeRequest(b []byte, id string) (*Request, string) {
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
	switch req.Type {
	case TypeFetchMedia, TypeListMedia, TypeSendMessage, TypeSendMedia:
	default:
		return nil, fmt.Sprintf("unknown request type %q", req.Type)
	}
	return &req, ""
}

// quarantine moves a bad request to failed/ with a .reason file and, when
// the id is known, answers so the caller does not wait for its deadline.
func (h *Host) quarantine(l Layout, path, id, reason string) {
	name := filepath.Base(path)
	dest := filepath.Join(l.Failed(), name)
	if _, err := os.Lstat(dest); err == nil {
		dest = filepath.Join(l.Failed(), fmt.Sprintf("%s.%d", name, time.Now().UnixNano()))
	}
	if err := os.Rename(path, dest); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		h.opts.Log.Error("ipc: cannot quarantine request, removing it", "file", name, "err", err)
		os.Remove(path)
	}
	_ = WriteAtomic(l.Failed(), filepath.Base(dest)+".reason", []byte(reason+"\n"))
	h.opts.Log.Warn("ipc: request quarantined", "group", filepath.Base(l.Root), "file", name, "reason", reason)
	if id != "" {
		h.respond(l, &Response{Version: Version, ID: id, Error: Errorf(CodeBadRequest, "%s", reason)})
	}
}

func (h *Host) respond(l Layout, r *Response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return WriteAtomic(l.Responses(), r.ID+".json", b)
}

func (h *Host) handle(ctx context.Context, g string, l Layout, path string, req *Request) {
	select {
	case h.perGrp[g] <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-h.perGrp[g] }()
	select {
	case h.global <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-h.global }()

	start := time.Now()
	result, herr := h.safeHandle(ctx, g, req)
	if ctx.Err() != nil {
		// Shutting down: leave the request for the next start rather than
		// answer with a spurious cancellation.
		return
	}
	resp := &Response{Version: Version, ID: req.ID, OK: herr == nil, Error: herr}
	if herr == nil && result != nil {
		b, err := json.Marshal(result)
		if err != nil {
			resp.OK, resp.Error = false, Errorf(CodeInternal, "cannot encode result: %v", err)
		} else {
			resp.Result = b
		}
	}
	if err := h.respond(l, resp); err != nil {
		h.opts.Log.Error("ipc: cannot write response; request left for retry", "group", g, "id", req.ID, "err", err)
		return
	}
	os.Remove(path)
	attrs := []any{"group", g, "type", req.Type, "id", req.ID, "took", time.Since(start).Round(time.Microsecond)}
	if herr != nil {
		h.opts.Log.Info("ipc: request failed", append(attrs, "code", herr.Code, "msg", herr.Message)...)
	} else {
		h.opts.Log.Debug("ipc: request done", attrs...)
	}
}

func (h *Host) safeHandle(ctx context.Context, g string, req *Request) (result any, herr *Error) {
	defer func() {
		if p := recover(); p != nil {
			h.opts.Log.Error("ipc: handler panicked", "group", g, "type", req.Type, "panic", p)
			result, herr = nil, Errorf(CodeInternal, "the host failed handling %s", req.Type)
		}
	}()
	return h.opts.Handler.Handle(ctx, g, req)
}
