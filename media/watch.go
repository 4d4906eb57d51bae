package media

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/botd-dev/botd/internal/progress"

	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/wake"
	"github.com/botd-dev/botd/mediaregistry"
)

// Download phases a waiting caller is told about.
const (
	stateQueued      = progress.Queued
	stateDownloading = progress.Downloading
)

// errStalled is the cause of a download cancelled for want of bytes.
var errStalled = errors.New("download stalled")

// meter counts the bytes of one download as they reach the cache: the
// stall guard cuts a download that stopped moving, and waiting callers
// are told how far it got.
type meter struct {
	state atomic.Value // stateQueued or stateDownloading
	done  atomic.Int64
	total int64 // declared size, 0 when unknown
	moved wake.Signal
}

func newMeter(total int64) *meter {
	m := &meter{total: total, moved: wake.New()}
	m.state.Store(stateQueued)
	return m
}

func (m *meter) add(n int) {
	if n <= 0 {
		return
	}
	m.done.Add(int64(n))
	m.moved.Wake()
}

// snapshot is what a waiting caller reports.
func (m *meter) snapshot() (state string, done, total int64) {
	done = m.done.Load()
	if m.total > 0 && done > m.total {
		// WhatsApp decrypts in place and writes the file twice.
		done = m.total
	}
	return m.state.Load().(string), done, m.total
}

type meteredReader struct {
	r io.Reader
	m *meter
}

func (r meteredReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.m.add(n)
	return n, err
}

// meteredFile counts what a channels.FileDownloader writes into the cache file.
type meteredFile struct {
	mediaregistry.File
	m *meter
}

func (f meteredFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.m.add(n)
	return n, err
}

func (f meteredFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.m.add(n)
	return n, err
}

// guardStall cancels the download with errStalled once no byte arrived
// for idle (counted from the start, and from each byte since). It returns
// when ctx ends.
func guardStall(ctx context.Context, cancel context.CancelCauseFunc, m *meter, idle time.Duration) {
	t := time.AfterFunc(idle, func() { cancel(errStalled) })
	defer t.Stop()
	for clock.Wait(ctx, clock.Real{}, clock.Forever, m.moved.C()) {
		t.Reset(idle)
	}
}

// slot takes one of the group's download slots, telling the meter it is
// queued meanwhile; release gives it back.
func (s *Service) slot(ctx context.Context, group string) (release func(), err error) {
	s.mu.Lock()
	sem, ok := s.slots[group]
	if !ok {
		sem = make(chan struct{}, s.o.DownloadsPerGroup)
		s.slots[group] = sem
	}
	s.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// reportProgress tells the caller waiting on ctx (the request's, not the
// detached download's) where a download is: a client whose own deadline
// passes hears "still downloading, 12 of 50 MB" instead of "no host".
func reportProgress(ctx context.Context, m *meter) {
	state, done, total := m.snapshot()
	progress.Report(ctx, progress.Progress{State: state, Done: done, Total: total})
}
