package gemini_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/gemini"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/providers"
)

// filesServer is a loopback Gemini with the resumable Files API: a start
// call hands out an upload URL (uploadHost overrides its host), the
// finalize call returns the file (the first one PROCESSING until polled),
// files expire 48h after upload on the test clock.
type filesServer struct {
	srv        *llmtest.Server
	clock      *llmtest.Clock
	n          atomic.Int32
	uploadHost string
	mu         sync.Mutex
	live       map[string]string // name → state
}

func newFilesServer(t *testing.T, clock *llmtest.Clock) *filesServer {
	t.Helper()
	f := &filesServer{clock: clock, live: map[string]string{}}
	text := llmtest.LoadFixture(t, "testdata/text.http")
	f.srv = llmtest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		file := func(name, state string) string {
			return fmt.Sprintf(`{"name":%q,"uri":%q,"mimeType":"video/mp4","state":%q,"expirationTime":%q}`,
				name, f.srv.URL+"/v1beta/"+name, state, f.clock.Now().Add(48*time.Hour).Format(time.RFC3339Nano))
		}
		switch {
		case r.URL.Path == "/upload/v1beta/files" && r.Header.Get("X-Goog-Upload-Command") == "start":
			host := f.srv.URL
			if f.uploadHost != "" {
				host = f.uploadHost
			}
			w.Header().Set("X-Goog-Upload-URL", fmt.Sprintf("%s/upload/v1beta/files?upload_id=u%d&upload_protocol=resumable", host, f.n.Load()+1))
		case r.URL.Path == "/upload/v1beta/files" && r.Header.Get("X-Goog-Upload-Command") == "upload, finalize":
			name := fmt.Sprintf("files/abc%d", f.n.Add(1))
			state := "ACTIVE"
			if f.n.Load() == 1 {
				state = "PROCESSING" // the first upload is still being processed
			}
			f.live[name] = state
			fmt.Fprintf(w, `{"file":%s}`, file(name, state))
		case strings.HasPrefix(r.URL.Path, "/v1beta/files/") && r.Method == http.MethodGet:
			name := strings.TrimPrefix(r.URL.Path, "/v1beta/")
			if _, ok := f.live[name]; !ok {
				http.NotFound(w, r)
				return
			}
			f.live[name] = "ACTIVE"
			fmt.Fprint(w, file(name, "ACTIVE"))
		case strings.HasPrefix(r.URL.Path, "/v1beta/files/") && r.Method == http.MethodDelete:
			name := strings.TrimPrefix(r.URL.Path, "/v1beta/")
			if _, ok := f.live[name]; !ok {
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, `{"error":{"code":404,"message":"File not found","status":"NOT_FOUND"}}`)
				return
			}
			delete(f.live, name)
			fmt.Fprint(w, `{}`)
		case strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
			text.Handler()(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	return f
}

func videoRequest(path string) *llm.Request {
	return &llm.Request{Model: "gemini-2.5-flash", MaxTokens: 100, Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []llm.Part{llm.Text("what happens here?"), llm.MediaFile("video/mp4", path)}},
	}}
}

// A video goes up once through the resumable protocol (its length and type
// announced, the key kept off the upload URL), is waited on while
// PROCESSING, and is referred to as fileData; a day before its 48h expiry
// is near enough that it goes up again; the sweep deletes it.
func TestFilesAPI(t *testing.T) {
	ctx := context.Background()
	up, clock := llmtest.Uploads(t)
	api := newFilesServer(t, clock)
	p := gemini.New(llmtest.APIKey, api.srv.URL, api.srv.Client(), providers.WithFiles(up))
	video, data := llmtest.MediaFile(t, "clip.mp4", 8192)

	for range 2 {
		if _, err := p.Generate(ctx, videoRequest(video)); err != nil {
			t.Fatal(err)
		}
	}
	ups := api.srv.ByPath(http.MethodPost, "/upload/v1beta/files")
	if len(ups) != 2 {
		t.Fatalf("%d upload calls, want start + finalize once", len(ups))
	}
	start, fin := ups[0], ups[1]
	if start.Header.Get("X-Goog-Upload-Protocol") != "resumable" || start.Header.Get("X-Goog-Upload-Header-Content-Length") != "8192" ||
		start.Header.Get("X-Goog-Upload-Header-Content-Type") != "video/mp4" || start.Header.Get("x-goog-api-key") != llmtest.APIKey {
		t.Errorf("start headers %v", start.Header)
	}
	if !strings.Contains(string(start.Body), `"display_name":"clip.mp4"`) {
		t.Errorf("start body %s", start.Body)
	}
	if fin.Header.Get("x-goog-api-key") != "" || fin.Header.Get("X-Goog-Upload-Offset") != "0" || string(fin.Body) != string(data) {
		t.Errorf("finalize: key %q, offset %q, %d bytes", fin.Header.Get("x-goog-api-key"), fin.Header.Get("X-Goog-Upload-Offset"), len(fin.Body))
	}
	if polls := api.srv.ByPath(http.MethodGet, "/v1beta/files/abc1"); len(polls) != 1 {
		t.Errorf("%d status polls of the processing video, want 1", len(polls))
	}
	gens := api.srv.ByPath(http.MethodPost, "/v1beta/models/gemini-2.5-flash:streamGenerateContent")
	llmtest.Golden(t, "testdata/files_request.golden.json", llmtest.Indent(t, []byte(strings.ReplaceAll(string(gens[0].Body), api.srv.URL, "http://gemini.test"))))
	if strings.Contains(string(gens[1].Body), base64.StdEncoding.EncodeToString(data[:300])) {
		t.Error("the second request carries the video's bytes")
	}

	clock.Advance(47*time.Hour + 30*time.Minute)
	if _, err := p.Generate(ctx, videoRequest(video)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(api.srv.Last(t).Body), "/v1beta/files/abc2") {
		t.Fatalf("near expiry the video should go up again as abc2: %s", api.srv.Last(t).Body)
	}

	clock.Advance(25 * time.Hour)
	res, err := up.Sweep(ctx, map[string]llm.FilesAPI{p.Name(): p})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	if len(api.srv.ByPath(http.MethodDelete, "/v1beta/files/abc2")) != 1 {
		t.Error("abc2 was not deleted")
	}
	if err := p.DeleteFile(ctx, llm.RemoteFile{ID: "files/gone"}); err != nil {
		t.Errorf("deleting a missing file: %v", err)
	}
}

// An upload URL on another host is refused: the video's bytes go nowhere
// but the API, and the request goes inline.
func TestUploadURLOtherHost(t *testing.T) {
	var got atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer evil.Close()
	up, clock := llmtest.Uploads(t)
	api := newFilesServer(t, clock)
	api.uploadHost = evil.URL
	p := gemini.New(llmtest.APIKey, api.srv.URL, api.srv.Client(), providers.WithFiles(up))
	video, data := llmtest.MediaFile(t, "clip.mp4", 8192)
	if _, err := p.Generate(context.Background(), videoRequest(video)); err != nil {
		t.Fatal(err)
	}
	if got.Load() != 0 {
		t.Errorf("the other host received %d requests", got.Load())
	}
	if !strings.Contains(string(api.srv.Last(t).Body), base64.StdEncoding.EncodeToString(data[:300])) {
		t.Error("the video should have gone inline")
	}
}
