package uploads_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/llmtest"
)

// provider is an in-memory files API: it keeps what was uploaded, and can
// be told to block uploads until released, panic, or fail deletes.
type provider struct {
	mu         sync.Mutex
	files      map[string][]byte
	n          int
	gate       chan struct{} // when set, uploads wait for it
	entered    chan struct{}
	panicking  bool
	failDelete bool
}

func newProvider() *provider { return &provider{files: map[string][]byte{}} }

func (p *provider) Name() string { return "fake" }

func (p *provider) FileUsable(mime string, size int64) (bool, string) {
	if mime == "audio/ogg" {
		return false, "no audio"
	}
	return true, ""
}

func (p *provider) UploadFile(ctx context.Context, f llm.FileUpload) (llm.RemoteFile, error) {
	if p.entered != nil {
		p.entered <- struct{}{}
	}
	if p.gate != nil {
		<-p.gate
	}
	if p.panicking {
		panic("upload exploded")
	}
	b, err := io.ReadAll(f.Body)
	if err != nil {
		return llm.RemoteFile{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	id := fmt.Sprintf("f%d", p.n)
	p.files[id] = b
	return llm.RemoteFile{ID: id}, nil
}

func (p *provider) DeleteFile(ctx context.Context, f llm.RemoteFile) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failDelete {
		return errors.New("provider down")
	}
	delete(p.files, f.ID)
	return nil
}

func (p *provider) uploads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Runs asking for the same bytes at once upload them once; both get the
// same file.
func TestConcurrentSameBytes(t *testing.T) {
	s, _ := llmtest.Uploads(t)
	p := newProvider()
	p.gate, p.entered = make(chan struct{}), make(chan struct{}, 4)
	path, _ := llmtest.MediaFile(t, "a.png", 4096)
	var wg sync.WaitGroup
	got := make([]llm.RemoteFile, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = s.Remote(context.Background(), p, &llm.Media{MIME: "image/png", Path: path})
		}()
	}
	<-p.entered // one upload is under way; the others wait on its key
	close(p.gate)
	wg.Wait()
	if p.uploads() != 1 {
		t.Fatalf("%d uploads, want 1", p.uploads())
	}
	for i, f := range got {
		if f.ID != "f1" {
			t.Errorf("caller %d got %q, want f1", i, f.ID)
		}
	}
}

func TestInlineCases(t *testing.T) {
	s, _ := llmtest.Uploads(t)
	big, _ := llmtest.MediaFile(t, "v.ogg", 4096)
	small, _ := llmtest.MediaFile(t, "s.png", 100)
	for _, tc := range []struct {
		name string
		m    llm.Media
	}{
		{"small", llm.Media{MIME: "image/png", Path: small}},
		{"type the provider cannot refer to", llm.Media{MIME: "audio/ogg", Path: big}},
		{"missing file", llm.Media{MIME: "image/png", Path: big + ".gone"}},
		{"bytes already inline", llm.Media{MIME: "image/png", Data: "aGk="}},
	} {
		p := newProvider()
		if f, ok := s.Remote(context.Background(), p, &tc.m); ok || p.uploads() != 0 {
			t.Errorf("%s: got %+v uploaded=%d, want inline", tc.name, f, p.uploads())
		}
	}
}

// A panicking upload is a failed upload: the media goes inline, the
// daemon lives, and the key is free for the next try.
func TestUploadPanic(t *testing.T) {
	s, _ := llmtest.Uploads(t)
	p := newProvider()
	p.panicking = true
	path, _ := llmtest.MediaFile(t, "a.png", 4096)
	if _, ok := s.Remote(context.Background(), p, &llm.Media{MIME: "image/png", Path: path}); ok {
		t.Fatal("a panicking upload reported a file")
	}
	p.panicking = false
	if f, ok := s.Remote(context.Background(), p, &llm.Media{MIME: "image/png", Path: path}); !ok || f.ID != "f1" {
		t.Fatalf("after the panic: %+v %v", f, ok)
	}
}

// A delete that fails is kept and tried again; a provider no longer
// configured has its uploads forgotten.
func TestSweepRetries(t *testing.T) {
	ctx := context.Background()
	s, clock := llmtest.Uploads(t)
	p := newProvider()
	path, _ := llmtest.MediaFile(t, "a.png", 4096)
	if _, ok := s.Remote(ctx, p, &llm.Media{MIME: "image/png", Path: path}); !ok {
		t.Fatal("no upload")
	}
	clock.Advance(48 * time.Hour)
	p.failDelete = true
	if res, err := s.Sweep(ctx, map[string]llm.FilesAPI{"fake": p}); err != nil || res.Failed != 1 {
		t.Fatalf("sweep with the provider down: %+v %v", res, err)
	}
	if n, _ := s.Count(ctx); n != 1 {
		t.Fatalf("a failed delete was forgotten")
	}
	p.failDelete = false
	if res, err := s.Sweep(ctx, map[string]llm.FilesAPI{"fake": p}); err != nil || res.Deleted != 1 || len(p.files) != 0 {
		t.Fatalf("second sweep: %+v %v, %d files left at the provider", res, err, len(p.files))
	}

	if _, ok := s.Remote(ctx, p, &llm.Media{MIME: "image/png", Path: path}); !ok {
		t.Fatal("no upload")
	}
	clock.Advance(48 * time.Hour)
	if res, err := s.Sweep(ctx, nil); err != nil || res.Expired != 1 {
		t.Fatalf("sweep without the provider: %+v %v", res, err)
	}
	if n, _ := s.Count(ctx); n != 0 {
		t.Errorf("%d uploads remembered", n)
	}
}
