package ipc_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// hangGuard bounds every wait of these tests: a condition that should hold
// at once but never does fails the test instead of hanging it. No verdict
// depends on it racing another timer.
const hangGuard = 10 * time.Second

func TestMain(m *testing.M) {
	// Some tests run a host in a child process (to kill -9 it, or to give
	// it a mount namespace): the test binary is that child.
	switch os.Getenv("IPC_TEST_HELPER") {
	case "":
	case "send-then-hang":
		helperSendThenHang()
		return
	case "bindmount":
		helperBindMount()
		return
	default:
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// call is one handler invocation.
type call struct {
	Group, Type, ID string
	Args            json.RawMessage
}

// funcHandler answers with fn and records every call.
type funcHandler struct {
	mu    sync.Mutex
	calls []call
	fn    func(ctx context.Context, group string, req *tools.Request) (any, *tools.Error)
}

func (f *funcHandler) Handle(ctx context.Context, group string, req *tools.Request) (any, *tools.Error) {
	f.mu.Lock()
	f.calls = append(f.calls, call{group, req.Type, req.ID, req.Args})
	f.mu.Unlock()
	if f.fn == nil {
		return tools.ListMediaResult{}, nil
	}
	return f.fn(ctx, group, req)
}

func (f *funcHandler) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// logRec keeps every log record so a test can wait for one.
type logRec struct {
	mu   sync.Mutex
	recs []string // "LEVEL msg k=v ..."
}

func (l *logRec) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRec) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, b.String())
	l.mu.Unlock()
	return nil
}
func (l *logRec) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRec) WithGroup(string) slog.Handler      { return l }

// matching returns the records containing every one of subs.
func (l *logRec) matching(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(r, s)
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

func (l *logRec) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.recs, "\n")
}

type rig struct {
	root   string // data/ipc
	host   *ipc.Host
	h      *funcHandler
	log    *logRec
	cancel context.CancelFunc
}

// newRig starts a host for groups under a fresh data/ipc.
func newRig(t *testing.T, h *funcHandler, o ipc.HostOptions, groups ...string) *rig {
	t.Helper()
	r := &rig{root: filepath.Join(t.TempDir(), "data", "ipc"), h: h, log: &logRec{}}
	return r.start(t, o, groups...)
}

func (r *rig) start(t *testing.T, o ipc.HostOptions, groups ...string) *rig {
	t.Helper()
	o.Root, o.Groups, o.Handler, o.Log = r.root, groups, r.h, slog.New(r.log)
	if o.Types == nil {
		o.Types = tools.IPCTypes()
	}
	if o.Rescan == 0 {
		o.Rescan = time.Hour // tests poke Rescan themselves
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.host, r.cancel = ipc.NewHost(o), cancel
	if err := r.host.Start(ctx); err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(r.stop)
	return r
}

func (r *rig) stop() {
	r.cancel()
	r.host.Wait()
}

func (r *rig) layout(g string) ipc.Layout { return ipc.GroupLayout(r.root, g) }

func (r *rig) client(t *testing.T, g string) *ipc.Client {
	c := ipc.NewClient(r.layout(g), tools.IPCTypes())
	t.Cleanup(func() { c.Close() })
	return c
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

// writeRequest puts a request file into dir the way a client does.
func writeRequest(t *testing.T, dir, id, typ string, args any, created time.Time) {
	t.Helper()
	raw, _ := json.Marshal(args)
	b, _ := json.Marshal(ipc.Request{Version: ipc.Version, ID: id, Type: typ, Args: raw, Created: created})
	if err := ipc.WriteAtomic(dir, id+".json", b); err != nil {
		t.Fatal(err)
	}
}

// response waits for responses/<id>.json of l and decodes it.
func response(t *testing.T, l ipc.Layout, id string) ipc.Response {
	t.Helper()
	path := filepath.Join(l.Responses(), id+".json")
	testwait.Until(t, "response "+id, func() bool { return exists(path) })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var resp ipc.Response
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("response %s: %v", b, err)
	}
	return resp
}

func wantCode(t *testing.T, resp ipc.Response, code string) {
	t.Helper()
	if resp.OK || resp.Error == nil || resp.Error.Code != code {
		b, _ := json.Marshal(resp)
		t.Fatalf("response %s, want %s", b, code)
	}
}

// manualDeadline is a context whose deadline passes when the test says
// so: the client's verdict then depends on what happened before, never on
// which of two timers fired first.
type manualDeadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newManualDeadline() *manualDeadline {
	return &manualDeadline{Context: context.Background(), done: make(chan struct{})}
}

func (m *manualDeadline) Done() <-chan struct{} { return m.done }
func (m *manualDeadline) Err() error {
	select {
	case <-m.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
func (m *manualDeadline) pass() { m.once.Do(func() { close(m.done) }) }

// guard is a context for a call that should be answered at once.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// recv waits for one value or fails at the hang guard.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("%s: nothing within %v", what, hangGuard)
	}
	panic("unreachable")
}

func ipcError(err error) *tools.Error {
	var ie *tools.Error
	if errors.As(err, &ie) {
		return ie
	}
	return nil
}
