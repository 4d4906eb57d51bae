package ipc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// A group folder botd did not create leaves that group out at Start, with
// the path and what to do (Disabled), nothing is written through it, and
// the other group is served; a bad data/ipc fails Start.
func TestStartRefusesFoldersBotdDidNotCreate(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, outside string)
		want  string
	}{
		{"failed/ is a symlink out", func(t *testing.T, root, outside string) {
			must(t, os.Symlink(outside, filepath.Join(root, "fam", "failed")))
		}, "ipc/fam/failed is a symlink; botd did not create it. Remove it and restart"},
		{"requests/ is a symlink to another group's", func(t *testing.T, root, _ string) {
			must(t, os.Symlink("../work/requests", filepath.Join(root, "fam", "requests")))
		}, "ipc/fam/requests is a symlink"},
		{"the group folder is a symlink to another group's", func(t *testing.T, root, _ string) {
			must(t, os.Remove(filepath.Join(root, "fam")))
			must(t, os.Symlink("work", filepath.Join(root, "fam")))
		}, "ipc/fam is a symlink"},
		{"data/ipc is a symlink", func(t *testing.T, root, outside string) {
			must(t, os.RemoveAll(root))
			must(t, os.Symlink(outside, root))
		}, "data/ipc is a symlink"},
		{"responses/ is a file", func(t *testing.T, root, _ string) {
			must(t, os.WriteFile(filepath.Join(root, "fam", "responses"), nil, 0o600))
		}, "ipc/fam/responses is not a directory"},
		{"processing/ belongs to another user", func(t *testing.T, root, _ string) {
			p := filepath.Join(root, "fam", "processing")
			must(t, os.Mkdir(p, 0o750))
			if err := os.Lchown(p, os.Getuid()+4242, -1); err != nil {
				t.Skipf("cannot give a folder away without root: %v", err)
			}
		}, fmt.Sprintf("belongs to uid %d, not to botd's uid %d", os.Getuid()+4242, os.Getuid())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "data", "ipc")
			outside := filepath.Join(dir, "outside")
			must(t, os.MkdirAll(outside, 0o750))
			must(t, os.MkdirAll(filepath.Join(root, "fam"), 0o750))
			must(t, ipc.GroupLayout(root, "work").Ensure())
			// A request of work waits; it must never be handled as fam's.
			writeRequest(t, filepath.Join(root, "work", "requests"), "w1", tools.SendMessage, tools.SendMessageArgs{Text: "for work"}, time.Now())
			tt.setup(t, root, outside)
			h := &funcHandler{}
			host := ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: root, Groups: []string{"fam", "work"}, Handler: h, Rescan: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			err := host.Start(ctx)
			global := tt.name == "data/ipc is a symlink"
			switch {
			case global && err == nil:
				cancel()
				host.Wait()
				t.Fatalf("Start accepted it; handler calls %+v", h.Calls())
			case global:
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Start: %v\nwant it to say %q", err, tt.want)
				}
			case err != nil:
				t.Fatalf("one group's folder failed Start for all: %v", err)
			default:
				if why := host.Disabled()["fam"]; why == nil || !strings.Contains(why.Error(), tt.want) {
					t.Errorf("fam disabled for %v, want it to say %q", why, tt.want)
				}
				if resp := response(t, ipc.GroupLayout(root, "work"), "w1"); !resp.OK {
					t.Errorf("work's request answered %+v", resp)
				}
			}
			cancel()
			host.Wait()
			if es, _ := os.ReadDir(outside); len(es) != 0 {
				t.Errorf("written outside data/ipc: %v", es)
			}
			for _, c := range h.Calls() {
				if c.Group != "work" {
					t.Errorf("handled %+v", c)
				}
			}
		})
	}
}

// failed/ replaced by a symlink while botd runs: the group is refused
// (said once, at Error) before anything is moved through it, and the other
// group is still served.
func TestSymlinkedFailedWhileRunningRefusesTheGroup(t *testing.T) {
	r := newRig(t, &funcHandler{}, ipc.HostOptions{}, "fam", "work")
	outside := filepath.Join(filepath.Dir(filepath.Dir(r.root)), "outside")
	must(t, os.Mkdir(outside, 0o750))
	fam := r.layout("fam")
	must(t, os.Remove(fam.Failed()))
	must(t, os.Symlink(outside, fam.Failed()))

	bad := filepath.Join(fam.Requests(), "bad.json")
	must(t, os.WriteFile(bad, []byte(`{"version":9,"id":"bad","type":"list_media"}`), 0o600))
	r.host.Rescan()
	if !testwait.Eventually(func() bool { return len(r.log.matching("ERROR", "group=fam", "fam/failed is a symlink")) > 0 }) {
		es, _ := os.ReadDir(outside)
		t.Fatalf("fam was not refused; outside holds %v; log:\n%s", es, r.log)
	}
	// Served: the other group. Refused: everything of fam.
	if err := r.client(t, "work").Call(guard(t), tools.ListMedia, tools.ListMediaArgs{}, nil); err != nil {
		t.Fatalf("work after fam was refused: %v", err)
	}
	r.host.Rescan()
	if err := r.client(t, "work").Call(guard(t), tools.ListMedia, tools.ListMediaArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Errorf("moved outside data/ipc: %v", es)
	}
	if !exists(bad) {
		t.Error("fam's request was acted on after fam was refused")
	}
	if n := len(r.log.matching("ERROR", "group=fam")); n != 1 {
		t.Errorf("%d error records for fam, want 1 (once, not every scan):\n%s", n, r.log)
	}
}

// requests/ of fam replaced by a symlink to work's while botd runs: fam is
// refused, and work's requests are handled as work's only.
func TestRequestsSwappedWhileRunningAreNotServedAsTheOtherGroup(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan call, 4)
	h := &funcHandler{fn: func(ctx context.Context, g string, req *tools.Request) (any, *tools.Error) {
		entered <- call{Group: g, ID: req.ID}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return tools.SendResult{Chat: "chat-of-" + g}, nil
	}}
	r := newRig(t, h, ipc.HostOptions{}, "fam", "work")
	fam, work := r.layout("fam"), r.layout("work")
	must(t, os.Rename(fam.Requests(), fam.Requests()+".old"))
	must(t, os.Symlink("../work/requests", fam.Requests()))

	writeRequest(t, work.Requests(), "w1", tools.SendMessage, tools.SendMessageArgs{Text: "for work"}, time.Now())
	r.host.Rescan()
	if got := recv(t, "work's send handled", entered); got.Group != "work" {
		t.Fatalf("work's request handled as %q", got.Group)
	}
	r.host.Rescan() // with w1 still in flight
	if !testwait.Eventually(func() bool { return len(r.log.matching("ERROR", "group=fam", "fam/requests is a symlink")) > 0 }) {
		t.Fatalf("fam was not refused; handler calls %+v; log:\n%s", h.Calls(), r.log)
	}
	close(release)
	if resp := response(t, work, "w1"); !resp.OK || !strings.Contains(string(resp.Result), "chat-of-work") {
		t.Errorf("w1 answered %+v", resp)
	}
	r.stop()
	if calls := h.Calls(); len(calls) != 1 || calls[0].Group != "work" {
		t.Errorf("handler calls %+v, want w1 once, as work", calls)
	}
	// fam's own client refuses to write through the symlink at once.
	start := time.Now()
	err := ipc.NewClient(fam, tools.IPCTypes()).Call(guard(t), tools.SendMessage, tools.SendMessageArgs{Text: "x"}, nil)
	if err == nil || !strings.Contains(err.Error(), "fam/requests is a symlink") || time.Since(start) > hangGuard/2 {
		t.Errorf("fam client: %v", err)
	}
	if es, _ := os.ReadDir(work.Requests()); len(es) != 0 {
		t.Errorf("fam's client wrote into work's requests: %v", es)
	}
}

// Two groups whose folders are one directory (a bind mount: no symlink to
// see) are refused, at Start and when it happens while botd runs. Needs a
// mount namespace (unshare -rm); skipped where there is none.
func TestSharedDirectoryRefused(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	dir := t.TempDir()
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Skipf("no mount namespaces: %v", err)
	}
	cmd := exec.Command("unshare", "-rm", "--", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "IPC_TEST_HELPER=bindmount", "IPC_TEST_ROOT="+filepath.Join(dir, "data", "ipc"), "IPC_TEST_PARENT_NS="+ns)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Skipf("unshare: %v", err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * hangGuard):
		cmd.Process.Kill()
		t.Fatalf("helper hung:\n%s", out.String())
	}
	text := out.String()
	if strings.Contains(text, "SKIP ") {
		t.Skip(strings.TrimSpace(text))
	}
	if err != nil {
		t.Fatalf("helper: %v, it said:\n%s", err, text)
	}
	for _, want := range []string{
		"START: work disabled: " + filepath.Join(dir, "data", "ipc", "work", "requests") + " is the same directory as " +
			filepath.Join(dir, "data", "ipc", "fam", "requests") + "; two groups can never share an IPC directory",
		"RUNTIME: ", "fam/requests is not the directory botd created",
		"HANDLED: []",
		"LIVE: ipc host: " + filepath.Join(dir, "data", "ipc", "late", "requests") + " is the same directory as " +
			filepath.Join(dir, "data", "ipc", "fam", "requests") + "; two groups can never share an IPC directory",
		"restart [work fam]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("helper said:\n%s\nwant %q", text, want)
		}
	}
}

// helperBindMount runs in a private mount namespace (and refuses to mount
// anything in its parent's).
func helperBindMount() {
	if ns, err := os.Readlink("/proc/self/ns/mnt"); err != nil || ns == os.Getenv("IPC_TEST_PARENT_NS") || os.Getenv("IPC_TEST_PARENT_NS") == "" {
		fmt.Println("FAIL not in a private mount namespace:", ns, err)
		os.Exit(1)
	}
	root := os.Getenv("IPC_TEST_ROOT")
	fam, work := ipc.GroupLayout(root, "fam"), ipc.GroupLayout(root, "work")
	for _, l := range []ipc.Layout{fam, work} {
		if err := l.Ensure(); err != nil {
			fmt.Println("FAIL", err)
			os.Exit(1)
		}
	}
	if err := syscall.Mount(fam.Requests(), work.Requests(), "", syscall.MS_BIND, ""); err != nil {
		fmt.Println("SKIP cannot bind mount:", err)
		return
	}
	h := &funcHandler{}
	host := ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: root, Groups: []string{"fam", "work"}, Handler: h, Rescan: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	if err := host.Start(ctx); err != nil {
		fmt.Println("FAIL start with a shared folder:", err)
		os.Exit(1)
	}
	fmt.Println("START: work disabled:", host.Disabled()["work"])
	cancel()
	host.Wait()
	ctx, cancel = context.WithCancel(context.Background())
	syscall.Unmount(work.Requests(), 0)

	// While running: fam's requests/ becomes work's, and a request of
	// work waits there.
	log := &logRec{}
	host = ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: root, Groups: []string{"fam", "work"}, Handler: h, Rescan: time.Hour, Log: slog.New(log)})
	if err := host.Start(ctx); err != nil {
		fmt.Println("FAIL start:", err)
		os.Exit(1)
	}
	if err := syscall.Mount(work.Requests(), fam.Requests(), "", syscall.MS_BIND, ""); err != nil {
		fmt.Println("FAIL mount:", err)
		os.Exit(1)
	}
	host.Rescan()
	if !testwait.Eventually(func() bool { return len(log.matching("ERROR", "group=fam")) > 0 }) {
		fmt.Println("FAIL not refused:", log)
		os.Exit(1)
	}
	fmt.Println("RUNTIME:", log.matching("ERROR", "group=fam")[0])
	raw, _ := json.Marshal(ipc.Request{Version: ipc.Version, ID: "w1", Type: tools.SendMessage, Created: time.Now()})
	ipc.WriteAtomic(work.Requests(), "w1.json", raw)
	host.Rescan()
	if !testwait.Eventually(func() bool { return exists(filepath.Join(work.Responses(), "w1.json")) }) {
		fmt.Println("FAIL work not answered")
		os.Exit(1)
	}
	cancel()
	host.Wait()

	// Added while running: late's requests/ is fam's (a bind mount); the
	// add is refused with the reason, fam stays served.
	syscall.Unmount(fam.Requests(), 0) // work's, mounted above
	late := ipc.GroupLayout(root, "late")
	if err := late.Ensure(); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
	if err := syscall.Mount(fam.Requests(), late.Requests(), "", syscall.MS_BIND, ""); err != nil {
		fmt.Println("FAIL mount:", err)
		os.Exit(1)
	}
	ctx, cancel = context.WithCancel(context.Background())
	host = ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: root, Groups: []string{"work"}, Handler: h, Rescan: time.Hour})
	if err := host.Start(ctx); err != nil {
		fmt.Println("FAIL start:", err)
		os.Exit(1)
	}
	if err := host.AddGroup("fam"); err != nil {
		fmt.Println("FAIL add fam:", err)
		os.Exit(1)
	}
	fmt.Println("LIVE:", host.AddGroup("late"), host.Groups())
	cancel()
	host.Wait()
	var fams []call
	for _, c := range h.Calls() {
		if c.Group == "fam" {
			fams = append(fams, c)
		}
	}
	fmt.Printf("HANDLED: %v\n", fams)
}

// The client refuses a symlinked folder before writing anything.
func TestClientRefusesSymlinkedRequests(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ipc")
	fam, work := ipc.GroupLayout(root, "fam"), ipc.GroupLayout(root, "work")
	must(t, work.Ensure())
	must(t, os.MkdirAll(fam.Root, 0o750))
	must(t, os.Symlink("../work/requests", fam.Requests()))
	err := ipc.NewClient(fam, tools.IPCTypes()).Call(guard(t), tools.ListMedia, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "fam/requests is a symlink") {
		t.Fatalf("Call: %v", err)
	}
	if es, _ := os.ReadDir(work.Requests()); len(es) != 0 {
		t.Errorf("written into work's requests: %v", es)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
