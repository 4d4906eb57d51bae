package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/mediaregistry/s3store/s3test"
	registry "github.com/botd-dev/botd/tools"
)

// remoteFixture is botd mcp --http with links on, for the family and work
// groups, and a clock the test moves.
type remoteFixture struct {
	url          string
	family, work *fakeHost
	mu           sync.Mutex
	now          time.Time
}

func (f *remoteFixture) clock() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }

func (f *remoteFixture) advance(d time.Duration) { f.mu.Lock(); f.now = f.now.Add(d); f.mu.Unlock() }

func newRemoteFixture(t *testing.T, presign func(context.Context, string, string, string, time.Duration) (string, error)) *remoteFixture {
	t.Helper()
	f := &remoteFixture{family: newFakeHost(t, "family"), work: newFakeHost(t, "work"), now: time.Now()}
	srv := func(h *fakeHost) *Server {
		s, err := NewServer(Options{GroupDir: h.dir, Caller: h, Version: "test", Log: testLogger(t), CallTimeout: 5 * time.Second,
			Links: &LinkOptions{TTL: 10 * time.Minute, Now: f.clock, Presign: presign}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	h, err := NewHTTPHandler(HTTPOptions{
		Addr:    "127.0.0.1:8765",
		Tokens:  map[string]string{tokFamily: "family", tokWork: "work"},
		Servers: map[string]*Server{"family": srv(f.family), "work": srv(f.work)},
		Log:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.url = "http://" + serveLoopback(t, h) + HTTPPath
	return f
}

func addFile(t *testing.T, h *fakeHost, ref, kind, name, mime, path string, data []byte, transcript string) {
	t.Helper()
	sum := sha256.Sum256(data)
	h.add(fakeMedia{data: data, res: registry.FetchMediaResult{Ref: ref, Kind: kind, Name: name, MIME: mime, Size: int64(len(data)),
		SHA256: hex.EncodeToString(sum[:]), Path: path, Transcript: transcript}})
}

// fetchLink calls fetch_media and returns the result's botd:// resource link.
func fetchLink(t *testing.T, c *client.Client, ref string) (mcpgo.ResourceLink, string) {
	t.Helper()
	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": ref})
	if res.IsError {
		t.Fatalf("fetch_media %s failed: %+v", ref, res.Content)
	}
	var text string
	var found []mcpgo.ResourceLink
	for _, ct := range res.Content {
		switch v := ct.(type) {
		case mcpgo.TextContent:
			text += v.Text
		case mcpgo.ResourceLink:
			if strings.HasPrefix(v.URI, "file:") {
				t.Fatalf("a remote client got a file:// link: %s", v.URI)
			}
			found = append(found, v)
		}
	}
	if len(found) != 1 || !strings.HasPrefix(found[0].URI, LinkScheme) {
		t.Fatalf("want one %s link, got %+v", LinkScheme, found)
	}
	return found[0], text
}

func readResource(c *client.Client, uri string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcpgo.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(ctx, req)
	if err != nil {
		return nil, "", err
	}
	if len(res.Contents) != 1 {
		return nil, "", io.ErrUnexpectedEOF
	}
	b, ok := res.Contents[0].(mcpgo.BlobResourceContents)
	if !ok {
		return nil, "", io.ErrUnexpectedEOF
	}
	data, err := base64.StdEncoding.DecodeString(b.Blob)
	return data, b.MIMEType, err
}

// A client over HTTP that cannot see the host's disk reads a 5 MB PDF and a
// voice note through the resources fetch_media returned; another group's
// token cannot read them, and neither can anyone once they expired.
func TestHTTPRemoteClientReadsFetchedFiles(t *testing.T) {
	f := newRemoteFixture(t, nil)
	pdf := append([]byte("%PDF-1.7\n% a large report\n"), make([]byte, 5<<20)...)
	rand.Read(pdf[30:])
	voice := append([]byte("OggS"), make([]byte, 40<<10)...)
	rand.Read(voice[4:])
	addFile(t, f.family, "tg_reportPDF1", "Document", "report.pdf", "application/pdf", "media/tg_reportPDF1_report.pdf", pdf, "")
	addFile(t, f.family, "tg_voiceNote1", "Voice", "", "audio/ogg", "media/tg_voiceNote1_voice.ogg", voice, "see you at eight")

	family := httpClient(t, f.url, tokFamily)
	work := httpClient(t, f.url, tokWork)
	tests := []struct {
		ref, mime string
		data      []byte
		wantText  string
	}{
		{"tg_reportPDF1", "application/pdf", pdf, "report.pdf"},
		{"tg_voiceNote1", "audio/ogg", voice, "see you at eight"},
	}
	var uris []string
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			l, text := fetchLink(t, family, tt.ref)
			if !strings.Contains(text, tt.wantText) || !strings.Contains(text, l.URI) {
				t.Errorf("result text does not describe the file and its resource:\n%s", text)
			}
			if _, ok := l.Meta.AdditionalFields[MetaExpires].(string); !ok {
				t.Errorf("no expiry in the link's _meta: %+v", l.Meta)
			}
			got, mime, err := readResource(family, l.URI)
			if err != nil || !bytes.Equal(got, tt.data) || mime != tt.mime {
				t.Fatalf("resources/read: %v, %d bytes of %s, want %d of %s", err, len(got), mime, len(tt.data), tt.mime)
			}
			if _, _, err := readResource(work, l.URI); err == nil || !strings.Contains(err.Error(), "no such media resource") {
				t.Fatalf("another group's token read the resource: %v", err)
			}
			uris = append(uris, l.URI)
		})
	}
	f.advance(10 * time.Minute)
	for _, u := range uris {
		if _, _, err := readResource(family, u); err == nil || !strings.Contains(err.Error(), "no such media resource") {
			t.Fatalf("an expired link was read: %v", err)
		}
	}
}

// A link to a file that was replaced since the fetch is refused rather
// than serving other bytes.
func TestLinkRefusesChangedFile(t *testing.T) {
	f := newRemoteFixture(t, nil)
	addFile(t, f.family, "tg_changed001", "Document", "a.txt", "text/plain", "media/tg_changed001_a.txt", []byte("original"), "")
	c := httpClient(t, f.url, tokFamily)
	l, _ := fetchLink(t, c, "tg_changed001")
	rewriteFile(t, f.family, "media/tg_changed001_a.txt", []byte("tampered"))
	if _, _, err := readResource(c, l.URI); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("read of a changed file: %v", err)
	}
}

// With the S3 store the link also carries a presigned URL of the bucket's
// object, which an HTTP client downloads without credentials.
func TestHTTPFetchPresignedURL(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.NewStore(t, "presigned")
	pdf := append([]byte("%PDF-1.4\n"), make([]byte, 64<<10)...)
	rand.Read(pdf[9:])
	sum := sha256.Sum256(pdf)
	sha := hex.EncodeToString(sum[:])
	if err := bucket.Put(context.Background(), mediaregistry.ObjectInfo{SHA256: sha, Size: int64(len(pdf)), MIME: "application/pdf"}, bytes.NewReader(pdf)); err != nil {
		t.Fatal(err)
	}
	presign := func(ctx context.Context, sha, name, mime string, ttl time.Duration) (string, error) {
		if _, err := bucket.Stat(ctx, sha); err != nil {
			return "", err
		}
		return bucket.PresignGet(ctx, sha, name, mime, ttl)
	}
	f := newRemoteFixture(t, presign)
	addFile(t, f.family, "tg_bucketPDF1", "Document", "minutes.pdf", "application/pdf", "media/tg_bucketPDF1_minutes.pdf", pdf, "")
	c := httpClient(t, f.url, tokFamily)
	l, text := fetchLink(t, c, "tg_bucketPDF1")
	u, _ := l.Meta.AdditionalFields[MetaURL].(string)
	if u == "" || !strings.Contains(text, u) {
		t.Fatalf("no presigned URL in the link (%+v) or the text", l.Meta)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, pdf) {
		t.Fatalf("presigned download: %d, %d bytes", resp.StatusCode, len(got))
	}
}

func rewriteFile(t *testing.T, h *fakeHost, rel string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, filepath.FromSlash(rel)), data, 0o640); err != nil {
		t.Fatal(err)
	}
}
