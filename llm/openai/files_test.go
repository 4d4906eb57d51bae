package openai_test

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
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/openai"
	"github.com/botd-dev/botd/llm/providers"
)

// filesServer is a loopback OpenAI with the Files API. Each upload lives
// for the expires_after the client asked for, counted from the test
// clock; noFiles makes it a compatible server without /files.
type filesServer struct {
	srv     *llmtest.Server
	clock   *llmtest.Clock
	n       atomic.Int32
	noFiles bool
	mu      sync.Mutex
	live    map[string]bool
}

func newFilesServer(t *testing.T, clock *llmtest.Clock, noFiles bool) *filesServer {
	t.Helper()
	f := &filesServer{clock: clock, noFiles: noFiles, live: map[string]bool{}}
	text := llmtest.LoadFixture(t, "testdata/text.http")
	f.srv = llmtest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case r.URL.Path == "/v1/files" && r.Method == http.MethodPost && !f.noFiles:
			id := fmt.Sprintf("file-%d", f.n.Add(1))
			f.live[id] = true
			now := f.clock.Now().Unix()
			fmt.Fprintf(w, `{"id":%q,"object":"file","bytes":1,"created_at":%d,"expires_at":%d,"filename":"x.pdf","purpose":"user_data"}`, id, now, now+7*24*3600)
		case strings.HasPrefix(r.URL.Path, "/v1/files/") && r.Method == http.MethodDelete && !f.noFiles:
			id := strings.TrimPrefix(r.URL.Path, "/v1/files/")
			if !f.live[id] {
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprintf(w, `{"error":{"message":"No such File object: %s","type":"invalid_request_error","code":null}}`, id)
				return
			}
			delete(f.live, id)
			fmt.Fprintf(w, `{"id":%q,"object":"file","deleted":true}`, id)
		case r.URL.Path == "/v1/chat/completions":
			text.Handler()(w, r)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"message":"Invalid URL","type":"invalid_request_error"}}`)
		}
	}))
	return f
}

func pdfRequest(path string) *llm.Request {
	return &llm.Request{Model: "gpt-4.1", MaxTokens: 100, Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []llm.Part{llm.Text("summarise"), llm.MediaFile("application/pdf", path)}},
	}}
}

// A PDF goes up once with purpose user_data and an expiry; requests refer
// to it as a file part; near its expiry it is uploaded again; the sweep
// deletes it; images stay inline (chat completions cannot refer to them).
func TestFilesAPI(t *testing.T) {
	ctx := context.Background()
	up, clock := llmtest.Uploads(t)
	api := newFilesServer(t, clock, false)
	p := openai.New(llmtest.APIKey, api.srv.URL+"/v1", api.srv.Client(), providers.WithFiles(up))
	pdf, data := llmtest.MediaFile(t, "report.pdf", 8192)

	for range 2 {
		if _, err := p.Generate(ctx, pdfRequest(pdf)); err != nil {
			t.Fatal(err)
		}
	}
	ups := api.srv.ByPath(http.MethodPost, "/v1/files")
	if len(ups) != 1 {
		t.Fatalf("%d uploads, want 1", len(ups))
	}
	u := llmtest.ParseMultipart(t, ups[0])
	if u.Fields["purpose"] != "user_data" || u.Fields["expires_after[anchor]"] != "created_at" || u.Fields["expires_after[seconds]"] != "604800" {
		t.Errorf("upload fields %v", u.Fields)
	}
	if u.Field != "file" || u.FileName != "report.pdf" || u.MIME != "application/pdf" || string(u.Data) != string(data) {
		t.Errorf("upload part %q %q %q with %d bytes", u.Field, u.FileName, u.MIME, len(u.Data))
	}
	if ups[0].Header.Get("Authorization") != "Bearer "+llmtest.APIKey {
		t.Error("upload without the key")
	}
	chats := api.srv.ByPath(http.MethodPost, "/v1/chat/completions")
	llmtest.Golden(t, "testdata/files_request.golden.json", llmtest.Indent(t, chats[0].Body))
	if !strings.Contains(string(chats[1].Body), `"file":{"file_id":"file-1"}`) {
		t.Errorf("second request does not refer to file-1: %s", chats[1].Body)
	}

	// Six days and 23½ hours later the file has half an hour left: too
	// little for a run, so it goes up again.
	clock.Advance(7*24*time.Hour - 30*time.Minute)
	if _, err := p.Generate(ctx, pdfRequest(pdf)); err != nil {
		t.Fatal(err)
	}
	if n := len(api.srv.ByPath(http.MethodPost, "/v1/files")); n != 2 || !strings.Contains(string(api.srv.Last(t).Body), `"file_id":"file-2"`) {
		t.Fatalf("near expiry: %d uploads, last request %s", n, api.srv.Last(t).Body)
	}

	// A photo stays inline: no upload.
	photo, pdata := llmtest.MediaFile(t, "photo.png", 8192)
	req := pdfRequest(photo)
	req.Messages[0].Parts[1] = llm.MediaFile("image/png", photo)
	if _, err := p.Generate(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := len(api.srv.ByPath(http.MethodPost, "/v1/files")); n != 2 || !strings.Contains(string(api.srv.Last(t).Body), base64.StdEncoding.EncodeToString(pdata[:300])) {
		t.Errorf("a photo should go inline (%d uploads)", n)
	}

	clock.Advance(25 * time.Hour)
	res, err := up.Sweep(ctx, map[string]llm.FilesAPI{p.Name(): p})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	if len(api.srv.ByPath(http.MethodDelete, "/v1/files/file-2")) != 1 {
		t.Error("file-2 was not deleted at the provider")
	}
	if err := p.DeleteFile(ctx, llm.RemoteFile{ID: "file-gone"}); err != nil {
		t.Errorf("deleting a missing file: %v", err)
	}
}

// A compatible server without /files: the first upload's 404 turns uploads
// off for that provider; every request still answers, inline.
func TestNoFilesAPI(t *testing.T) {
	ctx := context.Background()
	up, clock := llmtest.Uploads(t)
	api := newFilesServer(t, clock, true)
	p := openai.New(llmtest.APIKey, api.srv.URL+"/v1", api.srv.Client(), providers.WithName("local"), providers.WithFiles(up))
	pdf, data := llmtest.MediaFile(t, "report.pdf", 8192)
	for range 3 {
		if _, err := p.Generate(ctx, pdfRequest(pdf)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(api.srv.Last(t).Body), base64.StdEncoding.EncodeToString(data[:300])) {
			t.Fatal("the PDF should go inline")
		}
	}
	if n := len(api.srv.ByPath(http.MethodPost, "/v1/files")); n != 1 {
		t.Errorf("%d upload attempts, want 1 (then no more)", n)
	}
}
