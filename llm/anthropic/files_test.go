package anthropic_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/anthropic"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/providers"
)

// filesAPI is a loopback Anthropic with the Files API: uploads get ids
// file_1, file_2, …; deleting an unknown id is a 404; messages answer
// with the recorded text stream.
type filesAPI struct {
	srv        *llmtest.Server
	n          atomic.Int32
	failUpload atomic.Bool
	live       map[string]bool
}

func newFilesAPI(t *testing.T) *filesAPI {
	t.Helper()
	f := &filesAPI{live: map[string]bool{}}
	text := llmtest.LoadFixture(t, "testdata/text.http")
	var mu sync.Mutex
	f.srv = llmtest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/files":
			if f.failUpload.Load() {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, `{"type":"error","error":{"type":"api_error","message":"storage down"}}`)
				return
			}
			id := fmt.Sprintf("file_%d", f.n.Add(1))
			f.live[id] = true
			fmt.Fprintf(w, `{"id":%q,"type":"file","filename":"x","mime_type":"image/png","size_bytes":1,"created_at":"2026-11-23T09:00:00Z","downloadable":false}`, id)
		case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/files/"):
			id := strings.TrimPrefix(r.URL.Path, "/v1/files/")
			if !f.live[id] {
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":"File not found: %s"}}`, id)
				return
			}
			delete(f.live, id)
			fmt.Fprintf(w, `{"id":%q,"type":"file_deleted"}`, id)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
			text.Handler()(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	return f
}

func photoRequest(path string) *llm.Request {
	return &llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []llm.Part{llm.Text("what is this?"), llm.MediaFile("image/png", path)}},
	}}
}

// A photo above the threshold goes up once and every later request refers
// to it by file id (the same bytes at another path too); a small one stays
// inline; unused for longer than Keep it is deleted at Anthropic, and the
// next use uploads it again.
func TestFilesAPI(t *testing.T) {
	ctx := context.Background()
	api := newFilesAPI(t)
	up, clock := llmtest.Uploads(t)
	p := anthropic.New(llmtest.APIKey, api.srv.URL, api.srv.Client(), providers.WithFiles(up))
	photo, data := llmtest.MediaFile(t, "photo.png", 4096)
	again, _ := llmtest.MediaFile(t, "same-bytes.png", 4096)

	for _, path := range []string{photo, photo, again} {
		if _, err := p.Generate(ctx, photoRequest(path)); err != nil {
			t.Fatal(err)
		}
	}
	uploads := api.srv.ByPath(http.MethodPost, "/v1/files")
	if len(uploads) != 1 {
		t.Fatalf("%d uploads for the same bytes, want 1", len(uploads))
	}
	u := llmtest.ParseMultipart(t, uploads[0])
	if u.Field != "file" || u.FileName != "photo.png" || u.MIME != "image/png" || string(u.Data) != string(data) {
		t.Errorf("upload part %q %q %q with %d bytes, want file/photo.png/image/png with the photo's %d", u.Field, u.FileName, u.MIME, len(u.Data), len(data))
	}
	if got := uploads[0].Header.Get("anthropic-beta"); got != anthropic.FilesBeta {
		t.Errorf("upload anthropic-beta %q", got)
	}
	msgs := api.srv.ByPath(http.MethodPost, "/v1/messages")
	for i, m := range msgs {
		if got := m.Header.Get("anthropic-beta"); got != anthropic.FilesBeta {
			t.Errorf("message %d: anthropic-beta %q, want %q (it refers to a file)", i, got, anthropic.FilesBeta)
		}
		if strings.Contains(string(m.Body), base64.StdEncoding.EncodeToString(data[:300])) {
			t.Errorf("message %d still carries the photo's bytes", i)
		}
	}
	llmtest.Golden(t, "testdata/files_request.golden.json", llmtest.Indent(t, msgs[0].Body))

	// Below the threshold: inline, no upload, no beta header.
	small, sdata := llmtest.MediaFile(t, "small.png", 512)
	if _, err := p.Generate(ctx, photoRequest(small)); err != nil {
		t.Fatal(err)
	}
	last := api.srv.Last(t)
	if !strings.Contains(string(last.Body), base64.StdEncoding.EncodeToString(sdata)) || last.Header.Get("anthropic-beta") != "" {
		t.Error("a small photo should go inline without the files beta")
	}

	// Used an hour ago: the sweep keeps it.
	clock.Advance(time.Hour)
	res, err := up.Sweep(ctx, map[string]llm.FilesAPI{p.Name(): p})
	if err != nil || res.Deleted != 0 {
		t.Fatalf("sweep after 1h: %+v, %v; want nothing deleted", res, err)
	}
	clock.Advance(24 * time.Hour)
	res, err = up.Sweep(ctx, map[string]llm.FilesAPI{p.Name(): p})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("sweep after 25h: %+v, %v; want 1 deleted", res, err)
	}
	if d := api.srv.ByPath(http.MethodDelete, "/v1/files/file_1"); len(d) != 1 || d[0].Header.Get("anthropic-beta") != anthropic.FilesBeta {
		t.Fatalf("DELETE /v1/files/file_1 requests: %d", len(d))
	}
	if n, _ := up.Count(ctx); n != 0 {
		t.Errorf("%d uploads remembered after the sweep", n)
	}

	if _, err := p.Generate(ctx, photoRequest(photo)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(api.srv.Last(t).Body), `"file_id":"file_2"`) {
		t.Errorf("after the sweep the photo should be uploaded again as file_2: %s", api.srv.Last(t).Body)
	}

	// A file Anthropic no longer has is deleted already.
	if err := p.DeleteFile(ctx, llm.RemoteFile{ID: "file_gone"}); err != nil {
		t.Errorf("deleting a missing file: %v", err)
	}
}

// A failed upload never fails the answer: the photo goes inline.
func TestFilesUploadFailsInline(t *testing.T) {
	api := newFilesAPI(t)
	api.failUpload.Store(true)
	up, _ := llmtest.Uploads(t)
	p := anthropic.New(llmtest.APIKey, api.srv.URL, api.srv.Client(), providers.WithFiles(up))
	photo, data := llmtest.MediaFile(t, "photo.png", 4096)
	res, err := p.Generate(context.Background(), photoRequest(photo))
	if err != nil || res.Text() == "" {
		t.Fatalf("answer with a failing files API: %v", err)
	}
	last := api.srv.Last(t)
	if last.Path != "/v1/messages" || !strings.Contains(string(last.Body), base64.StdEncoding.EncodeToString(data[:300])) {
		t.Errorf("the photo should have gone inline")
	}
	if n, _ := up.Count(context.Background()); n != 0 {
		t.Errorf("a failed upload was remembered")
	}
}

func TestFileUsable(t *testing.T) {
	p := anthropic.New("k", "", nil)
	for _, tc := range []struct {
		mime string
		size int64
		want bool
	}{
		{"image/jpeg", 5 << 20, true},
		{"application/pdf", 30 << 20, true},
		{"audio/ogg", 1 << 20, false},
		{"image/png", 600 << 20, false},
	} {
		if ok, why := p.FileUsable(tc.mime, tc.size); ok != tc.want || (!ok && why == "") {
			t.Errorf("FileUsable(%s, %d) = %v %q, want %v with a reason when not", tc.mime, tc.size, ok, why, tc.want)
		}
	}
}
