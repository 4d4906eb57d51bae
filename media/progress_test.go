package media_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/internal/progress"
	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mediaregistry"
)

// progressStates reads the state of every progress file of group.
func progressStates(t *testing.T, r *mediatest.Rig, group string) []string {
	t.Helper()
	dir := ipc.GroupLayout(r.IPCRoot, group).Progress()
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var p struct{ State string }
		if json.Unmarshal(b, &p) == nil {
			out = append(out, p.State)
		}
	}
	return out
}

func countState(states []string, want string) int {
	n := 0
	for _, s := range states {
		if s == want {
			n++
		}
	}
	return n
}

// deadlineCtx is a context whose deadline "passes" when the test says so:
// the caller's give-up is then a decision of the test, not of a timer.
type deadlineCtx struct {
	context.Context
	done chan struct{}
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A caller whose deadline passes during a slow download hears that botd
// is still downloading, with the figures, not that botd is not running.
func TestSlowFetchReportsProgress(t *testing.T) {
	r := mediatest.New(t)
	gate := make(chan struct{})
	defer close(gate)
	id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Video, FileName: "film.mp4", Size: 900 << 10},
		chantest.Media{Data: []byte("x"), Gate: gate})
	ctx := newDeadlineCtx()
	errc := make(chan error, 1)
	go func() {
		errc <- r.Client("family").Call(ctx, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, nil)
	}()
	testwait.Until(t, "countState(progressStates(t, r, \"family\"), progress.Downloading) == 1", func() bool { return countState(progressStates(t, r, "family"), progress.Downloading) == 1 })
	close(ctx.done)
	err := <-errc
	t.Logf("caller heard: %v", err)
	var herr *tools.Error
	if !errors.As(err, &herr) || herr.Code != tools.CodeInProgress || !strings.Contains(herr.Message, "downloading") ||
		!strings.Contains(herr.Message, "900") {
		t.Fatalf("caller heard %v, want in_progress saying it is downloading (of 900 KB)", err)
	}
	if errors.Is(err, ipc.ErrNoHost) {
		t.Fatal("a slow download was diagnosed as no host")
	}
}

// Five callers of one ref share one download: the gate opens only once
// every one of them is provably waiting on it (its progress says so).
func TestConcurrentFetchesShareOneDownload(t *testing.T) {
	r := mediatest.New(t)
	gate := make(chan struct{})
	id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Document, FileName: "a.txt", MIME: "text/plain"},
		chantest.Media{Data: []byte(strings.Repeat("x", 5000)), Gate: gate})
	c := r.Client("family")
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, nil)
		}()
	}
	testwait.Until(t, "countState(progressStates(t, r, \"family\"), progress.Downloading) == len(errs)", func() bool { return countState(progressStates(t, r, "family"), progress.Downloading) == len(errs) })
	close(gate)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := r.TG.Downloads(); n != 1 {
		t.Errorf("downloads = %d, want 1", n)
	}
}
