package ipc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/progress"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// kill -9 after the network took a send and before botd wrote the answer:
// after the restart the send is not carried out again, and the caller
// learns that its fate is unknown.
func TestKilledSendIsNotRepeated(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "data", "ipc")
	marker := filepath.Join(dir, "sent")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "IPC_TEST_HELPER=send-then-hang", "IPC_TEST_ROOT="+root, "IPC_TEST_MARKER="+marker)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	fam := ipc.GroupLayout(root, "fam")
	c := ipc.NewClient(fam, tools.IPCTypes())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*hangGuard)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, tools.SendMessage, tools.SendMessageArgs{Text: "hello"}, nil) }()
	testwait.Until(t, "the helper host sent", func() bool { return exists(marker) })
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	killed = true

	h := &funcHandler{}
	r := &rig{root: root, h: h, log: &logRec{}}
	r.start(t, ipc.HostOptions{}, "fam")
	r.host.Rescan()
	err := recv(t, "the caller's answer", errc)
	if ie := ipcError(err); ie == nil || ie.Code != tools.CodeSendUnknown || !strings.Contains(ie.Message, "check the chat before sending again") {
		t.Errorf("caller got %v, want send_unknown", err)
	}
	r.stop()
	if calls := h.Calls(); len(calls) != 0 {
		t.Errorf("the send was carried out again after the restart: %+v", calls)
	}
	for _, d := range []string{fam.Requests(), fam.Processing()} {
		if es, _ := os.ReadDir(d); len(es) != 0 {
			t.Errorf("%s holds %v", d, es)
		}
	}
}

// helperSendThenHang is a host whose send "reaches the network" (the
// marker) and then hangs until it is killed.
func helperSendThenHang() {
	h := &funcHandler{fn: func(ctx context.Context, _ string, req *tools.Request) (any, *tools.Error) {
		if req.Type == tools.SendMessage {
			os.WriteFile(os.Getenv("IPC_TEST_MARKER"), []byte(req.ID), 0o600)
			select {}
		}
		return nil, nil
	}}
	host := ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: os.Getenv("IPC_TEST_ROOT"), Groups: []string{"fam"}, Handler: h, Rescan: 50 * time.Millisecond})
	if err := host.Start(context.Background()); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	select {}
}

// A stop while handlers run: a send that the handler gave up on is
// answered send_unknown (not left to be sent again); a fetch stays claimed
// and is carried out by the next start.
func TestStopSettlesInterruptedRequests(t *testing.T) {
	entered := make(chan string, 4)
	h := &funcHandler{fn: func(ctx context.Context, _ string, req *tools.Request) (any, *tools.Error) {
		entered <- req.ID
		<-ctx.Done()
		if req.Type == tools.SendMessage {
			return nil, tools.Errorf(tools.CodeSendFailed, "telegram: %v", ctx.Err())
		}
		return nil, tools.Errorf(tools.CodeDownloadFailed, "cancelled while downloading")
	}}
	r := newRig(t, h, ipc.HostOptions{}, "fam")
	fam := r.layout("fam")
	writeRequest(t, fam.Requests(), "s1", tools.SendMessage, tools.SendMessageArgs{Text: "hi"}, time.Now())
	writeRequest(t, fam.Requests(), "f1", tools.FetchMedia, tools.FetchMediaArgs{MediaRef: "tg_x"}, time.Now())
	r.host.Rescan()
	recv(t, "handler entered", entered)
	recv(t, "handler entered", entered)
	r.stop()

	resp := response(t, fam, "s1")
	wantCode(t, resp, tools.CodeSendUnknown)
	if !strings.Contains(resp.Error.Message, "telegram: context canceled") {
		t.Errorf("send_unknown message %q lost the handler's", resp.Error.Message)
	}
	if exists(filepath.Join(fam.Responses(), "f1.json")) {
		t.Error("the interrupted fetch was answered with its cancellation")
	}
	// The next start carries the fetch out (it is idempotent).
	h2 := &funcHandler{}
	r2 := &rig{root: r.root, h: h2, log: &logRec{}}
	r2.start(t, ipc.HostOptions{}, "fam")
	if resp := response(t, fam, "f1"); !resp.OK {
		t.Errorf("f1 after restart: %+v", resp)
	}
	r2.stop()
	if calls := h2.Calls(); len(calls) != 1 || calls[0].ID != "f1" {
		t.Errorf("after restart handled %+v, want f1 only", calls)
	}
}

// What a crash leaves in processing/ is settled at Start: sends answered
// send_unknown without calling the handler, fetches and lists carried out.
func TestStartSettlesProcessing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data", "ipc")
	fam := ipc.GroupLayout(root, "fam")
	must(t, fam.Ensure())
	writeRequest(t, fam.Processing(), "s1", tools.SendMessage, tools.SendMessageArgs{Text: "hi"}, time.Now())
	writeRequest(t, fam.Processing(), "m1", tools.SendMedia, tools.SendMediaArgs{Path: "a.png"}, time.Now())
	writeRequest(t, fam.Processing(), "f1", tools.FetchMedia, tools.FetchMediaArgs{MediaRef: "tg_x"}, time.Now())
	writeRequest(t, fam.Processing(), "l1", tools.ListMedia, tools.ListMediaArgs{}, time.Now())
	h := &funcHandler{}
	r := &rig{root: root, h: h, log: &logRec{}}
	r.start(t, ipc.HostOptions{}, "fam")
	for _, id := range []string{"s1", "m1"} {
		resp := response(t, fam, id)
		wantCode(t, resp, tools.CodeSendUnknown)
		if !strings.Contains(resp.Error.Message, "may or may not have reached the chat") {
			t.Errorf("%s: %q", id, resp.Error.Message)
		}
	}
	for _, id := range []string{"f1", "l1"} {
		if resp := response(t, fam, id); !resp.OK {
			t.Errorf("%s: %+v", id, resp)
		}
	}
	r.stop()
	var ids []string
	for _, c := range h.Calls() {
		ids = append(ids, c.ID)
	}
	sort.Strings(ids)
	if strings.Join(ids, ",") != "f1,l1" {
		t.Errorf("handled %v, want f1 and l1 only", ids)
	}
	if es, _ := os.ReadDir(fam.Processing()); len(es) != 0 {
		t.Errorf("processing/ holds %v", es)
	}
}

// A request older than MaxRequestAge (or from the future) is answered
// expired and never carried out.
func TestOldRequestsExpire(t *testing.T) {
	r := newRig(t, &funcHandler{}, ipc.HostOptions{}, "fam")
	fam := r.layout("fam")
	y2020 := time.Date(2020, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		id      string
		created time.Time
		mtime   time.Time // zero: now
		want    string
	}{
		{"created2020", y2020, time.Time{}, "request written at 2020-03-01T12:00:00Z, older than 10m; not carried out"},
		{"file2020", time.Time{}, y2020, "request file written at 2020-03-01T12:00:00Z, older than 10m; not carried out"},
		{"elevenMinutes", time.Now().Add(-ipc.MaxRequestAge - time.Minute), time.Time{}, "older than 10m"},
		{"future", time.Now().Add(time.Hour), time.Time{}, "more than 1m in the future; not carried out"},
	}
	for _, tt := range tests {
		// Written aside and renamed in, so the host sees it with its time.
		writeRequest(t, fam.Root, tt.id, tools.SendMessage, tools.SendMessageArgs{Text: "late"}, tt.created)
		aside := filepath.Join(fam.Root, tt.id+".json")
		if !tt.mtime.IsZero() {
			must(t, os.Chtimes(aside, tt.mtime, tt.mtime))
		}
		must(t, os.Rename(aside, filepath.Join(fam.Requests(), tt.id+".json")))
	}
	r.host.Rescan()
	for _, tt := range tests {
		resp := response(t, fam, tt.id)
		wantCode(t, resp, tools.CodeExpired)
		if !strings.Contains(resp.Error.Message, tt.want) {
			t.Errorf("%s: %q, want %q", tt.id, resp.Error.Message, tt.want)
		}
	}
	// Fresh requests, with or without Created, are carried out.
	writeRequest(t, fam.Requests(), "fresh", tools.ListMedia, nil, time.Now())
	writeRequest(t, fam.Requests(), "nocreated", tools.ListMedia, nil, time.Time{})
	r.host.Rescan()
	for _, id := range []string{"fresh", "nocreated"} {
		if resp := response(t, fam, id); !resp.OK {
			t.Errorf("%s: %+v", id, resp)
		}
	}
	r.stop()
	for _, c := range r.h.Calls() {
		if c.ID != "fresh" && c.ID != "nocreated" {
			t.Errorf("carried out %s", c.ID)
		}
	}
}

// A handler that reports progress: when the caller's deadline passes it
// hears how far the download got, not that botd is not running.
func TestProgressReachesTheClient(t *testing.T) {
	reported, release := make(chan struct{}), make(chan struct{})
	h := &funcHandler{fn: func(ctx context.Context, _ string, req *tools.Request) (any, *tools.Error) {
		progress.Report(ctx, progress.Progress{State: progress.Downloading, Done: 12 << 20, Total: 50 << 20})
		close(reported)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return tools.FetchMediaResult{Ref: "tg_x"}, nil
	}}
	r := newRig(t, h, ipc.HostOptions{}, "fam")
	fam := r.layout("fam")
	ctx := newManualDeadline()
	errc := make(chan error, 1)
	go func() {
		errc <- r.client(t, "fam").Call(ctx, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: "tg_x"}, nil)
	}()
	recv(t, "progress reported", reported)
	ctx.pass()
	err := recv(t, "the caller's answer", errc)
	ie := ipcError(err)
	if ie == nil || ie.Code != tools.CodeInProgress {
		t.Fatalf("Call: %v, want in_progress", err)
	}
	const want = "botd is still downloading this (12.0 of 50.0 MB); ask again shortly — the download continues"
	if ie.Message != want {
		t.Errorf("message %q\nwant      %q", ie.Message, want)
	}
	if errors.Is(err, tools.ErrNoHost) {
		t.Error("in_progress is also ErrNoHost")
	}
	es, _ := os.ReadDir(fam.Progress())
	if len(es) != 1 {
		t.Errorf("progress/ holds %v", es)
	}
	close(release)
	// The host finishes, answers (nobody collects it), and tidies up.
	testwait.Until(t, "answered", func() bool { es, _ := os.ReadDir(fam.Responses()); return len(es) == 1 })
	testwait.Until(t, "progress removed", func() bool { es, _ := os.ReadDir(fam.Progress()); return len(es) == 0 })
}

// No host ever looked at the request: ErrNoHost, and it is withdrawn.
func TestNoHostIsStillNoHost(t *testing.T) {
	fam := ipc.GroupLayout(filepath.Join(t.TempDir(), "ipc"), "fam")
	c := ipc.NewClient(fam, tools.IPCTypes())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Call(ctx, tools.ListMedia, nil, nil); !errors.Is(err, tools.ErrNoHost) {
		t.Fatalf("Call: %v, want ErrNoHost", err)
	}
	if es, _ := os.ReadDir(fam.Requests()); len(es) != 0 {
		t.Errorf("not withdrawn: %v", es)
	}
}

// The host saw the request but every slot of the group was taken: the
// caller hears busy, the request is withdrawn and never carried out.
func TestBusyGroupWithdraws(t *testing.T) {
	entered, release := make(chan string, 4), make(chan struct{})
	h := &funcHandler{fn: func(ctx context.Context, _ string, req *tools.Request) (any, *tools.Error) {
		entered <- req.ID
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}}
	r := newRig(t, h, ipc.HostOptions{PerGroup: 1}, "fam")
	fam := r.layout("fam")
	writeRequest(t, fam.Requests(), "slow", tools.FetchMedia, tools.FetchMediaArgs{MediaRef: "tg_x"}, time.Now())
	r.host.Rescan()
	recv(t, "slow handled", entered)

	ctx := newManualDeadline()
	errc := make(chan error, 1)
	go func() {
		errc <- r.client(t, "fam").Call(ctx, tools.SendMessage, tools.SendMessageArgs{Text: "hi"}, nil)
	}()
	testwait.Until(t, "the send queued", func() bool {
		es, _ := os.ReadDir(fam.Progress())
		for _, e := range es {
			if b, _ := os.ReadFile(filepath.Join(fam.Progress(), e.Name())); bytes.Contains(b, []byte(`"state":"queued"`)) {
				return true
			}
		}
		return false
	})
	ctx.pass()
	err := recv(t, "the caller's answer", errc)
	if ie := ipcError(err); ie == nil || ie.Code != tools.CodeBusy || !strings.Contains(ie.Message, "NOT sent") {
		t.Fatalf("Call: %v, want busy", err)
	}
	close(release)
	r.stop()
	if calls := h.Calls(); len(calls) != 1 {
		t.Errorf("handled %+v, want only the slow one", calls)
	}
}

// Four handlers of a group that never finish do not keep a fifth request
// of the same group from being answered.
func TestSlowHandlersDoNotBlockTheGroup(t *testing.T) {
	entered, release := make(chan string, 8), make(chan struct{})
	h := &funcHandler{fn: func(ctx context.Context, _ string, req *tools.Request) (any, *tools.Error) {
		if req.Type == tools.FetchMedia {
			entered <- req.ID
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return tools.ListMediaResult{}, nil
	}}
	r := newRig(t, h, ipc.HostOptions{}, "fam")
	c := r.client(t, "fam")
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*hangGuard)
			defer cancel()
			c.Call(ctx, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: "tg_x"}, nil)
		}()
	}
	for i := 0; i < 4; i++ {
		recv(t, "slow fetch started", entered)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var list tools.ListMediaResult
	if err := c.Call(ctx, tools.ListMedia, tools.ListMediaArgs{}, &list); err != nil {
		t.Fatalf("list while four fetches hang: %v", err)
	}
}

// Quarantine keeps a bounded piece of a huge file, and failed/ stays
// within its bounds, oldest first.
func TestFailedIsBounded(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data", "ipc")
	fam := ipc.GroupLayout(root, "fam")
	must(t, fam.Ensure())
	// Left by an older botd: 20 MB of evidence from last year.
	old := filepath.Join(fam.Failed(), "legacy.json")
	must(t, os.WriteFile(old, nil, 0o600))
	must(t, os.Truncate(old, 20<<20))
	must(t, os.WriteFile(old+".reason", []byte("old\n"), 0o600))
	lastYear := time.Now().AddDate(-1, 0, 0)
	must(t, os.Chtimes(old, lastYear, lastYear))
	must(t, os.Chtimes(old+".reason", lastYear, lastYear))

	r := &rig{root: root, h: &funcHandler{}, log: &logRec{}}
	r.start(t, ipc.HostOptions{}, "fam")
	if exists(old) {
		t.Error("the 20 MB legacy entry survived Start")
	}

	// A 1 GiB request file (sparse): answered, and only its head kept.
	big := filepath.Join(fam.Requests(), "big.json")
	must(t, os.WriteFile(big, []byte(`{"version":1,"id":"big","type":"list_media","args":{"x":"`), 0o600))
	must(t, os.Truncate(big, 1<<30))
	r.host.Rescan()
	wantCode(t, response(t, fam, "big"), tools.CodeBadRequest)
	fi, err := os.Lstat(filepath.Join(fam.Failed(), "big.json"))
	if err != nil || fi.Size() > ipc.FailedKeepBytes {
		t.Fatalf("failed/big.json: %v, %v bytes; want at most %d", err, sizeOf(fi), ipc.FailedKeepBytes)
	}
	reason, _ := os.ReadFile(filepath.Join(fam.Failed(), "big.json.reason"))
	if !strings.Contains(string(reason), fmt.Sprintf("only its first %d are kept", ipc.FailedKeepBytes)) {
		t.Errorf("reason %q", reason)
	}
	if exists(big) {
		t.Error("the huge request is still in requests/")
	}

	// A flood of bad requests.
	pad := strings.Repeat("x", 60<<10)
	const flood = ipc.FailedMaxEntries + 50
	for i := 0; i < flood; i++ {
		id := fmt.Sprintf("bad%03d", i)
		b := fmt.Sprintf(`{"version":9,"id":%q,"type":"list_media","args":{"pad":%q}}`, id, pad)
		must(t, ipc.WriteAtomic(fam.Requests(), id+".json", []byte(b)))
	}
	r.host.Rescan()
	for i := 0; i < flood; i++ {
		wantCode(t, response(t, fam, fmt.Sprintf("bad%03d", i)), tools.CodeBadRequest)
	}
	entries, bytes := failedUsage(t, fam)
	if entries > ipc.FailedMaxEntries || bytes > ipc.FailedMaxBytes {
		t.Errorf("failed/ holds %d entries, %d bytes; bounds %d, %d", entries, bytes, ipc.FailedMaxEntries, ipc.FailedMaxBytes)
	}
	if exists(filepath.Join(fam.Failed(), "big.json")) {
		t.Error("the oldest entry (big) survived the flood")
	}
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return -1
	}
	return fi.Size()
}

// failedUsage counts quarantined files (a file and its .reason are one)
// and their bytes.
func failedUsage(t *testing.T, l ipc.Layout) (entries int, bytes int64) {
	es, err := os.ReadDir(l.Failed())
	must(t, err)
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), ".reason") {
			entries++
		}
		if fi, err := e.Info(); err == nil {
			bytes += fi.Size()
		}
	}
	return entries, bytes
}

// The progress file never looks like a response to the client.
func TestProgressIsNotAResponse(t *testing.T) {
	gate := make(chan struct{})
	h := &funcHandler{fn: func(ctx context.Context, _ string, req *tools.Request) (any, *tools.Error) {
		progress.Report(ctx, progress.Progress{State: progress.Downloading, Done: 1})
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return tools.FetchMediaResult{Ref: "tg_ok"}, nil
	}}
	r := newRig(t, h, ipc.HostOptions{}, "fam")
	var res tools.FetchMediaResult
	errc := make(chan error, 1)
	go func() {
		errc <- r.client(t, "fam").Call(guard(t), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: "tg_ok"}, &res)
	}()
	testwait.Until(t, "progress written", func() bool { es, _ := os.ReadDir(r.layout("fam").Progress()); return len(es) == 1 })
	if es, _ := os.ReadDir(r.layout("fam").Responses()); len(es) != 0 {
		t.Errorf("responses/ holds %v while the handler runs", es)
	}
	close(gate)
	if err := recv(t, "answer", errc); err != nil || res.Ref != "tg_ok" {
		t.Fatalf("Call: %v %+v", err, res)
	}
}

// BenchmarkRoundTrip: one list_media through a real client and host.
func BenchmarkRoundTrip(b *testing.B) {
	root := filepath.Join(b.TempDir(), "ipc")
	host := ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: root, Groups: []string{"fam"}, Handler: &funcHandler{}, Rescan: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); host.Wait() }()
	if err := host.Start(ctx); err != nil {
		b.Fatal(err)
	}
	c := ipc.NewClient(ipc.GroupLayout(root, "fam"), tools.IPCTypes())
	defer c.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cctx, ccancel := context.WithTimeout(ctx, hangGuard)
		if err := c.Call(cctx, tools.ListMedia, tools.ListMediaArgs{}, nil); err != nil {
			b.Fatal(err)
		}
		ccancel()
	}
}
