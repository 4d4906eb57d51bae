package llmtest

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm/uploads"
	"github.com/botd-dev/botd/store"
)

// Clock is a settable time for expiry and sweep tests.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Uploads returns an uploads store on a fresh, migrated SQLite database
// that uploads files over 1 KiB and deletes them unused for 24h, and the
// clock it reads.
func Uploads(t testing.TB) (*uploads.Store, *Clock) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := &Clock{t: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)}
	return uploads.New(st.DB, uploads.Options{UploadOver: 1024, Keep: 24 * time.Hour, Now: clock.Now}), clock
}

// MediaFile writes n bytes of a pattern to a file named name in a temp
// directory and returns its path and bytes.
func MediaFile(t testing.TB, name string, n int) (string, []byte) {
	t.Helper()
	data := bytes.Repeat([]byte("botd-media-"), n/11+1)[:n]
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, data
}

// Upload is a parsed multipart/form-data request.
type Upload struct {
	Fields   map[string]string
	Field    string // the file part's form name
	FileName string
	MIME     string
	Data     []byte
}

// ParseMultipart reads a recorded multipart request with one file part.
func ParseMultipart(t testing.TB, rec Recorded) Upload {
	t.Helper()
	_, params, err := mime.ParseMediaType(rec.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("upload content type %q: %v", rec.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(bytes.NewReader(rec.Body), params["boundary"])
	up := Upload{Fields: map[string]string{}}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("upload body: %v", err)
		}
		b, _ := io.ReadAll(p)
		if p.FileName() == "" {
			up.Fields[p.FormName()] = string(b)
			continue
		}
		up.Field, up.FileName, up.MIME, up.Data = p.FormName(), p.FileName(), p.Header.Get("Content-Type"), b
	}
	return up
}
