package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// rig is a started web channel whose sink is the agent's router over a
// real store, reached through its handler (no sockets: what is measured
// is the channel, the refs and SQLite).
type rig struct {
	b       *testing.B
	w       *web.Web
	h       http.Handler
	st      *store.Store
	reg     *mediaregistry.Registry
	cookies []*http.Cookie
	csrf    string
}

var (
	tokenLine  = regexp.MustCompile(`login#token=([A-Za-z0-9_-]+)`)
	hiddenCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	dataCSRF   = regexp.MustCompile(`data-csrf="([^"]+)"`)
)

func newRig(b *testing.B) *rig {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "botd.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.DiscardHandler)
	set, err := groups.NewSet("Andy", []groups.Group{
		{Folder: "main", Chat: "web:main", RequiresTrigger: true},
		{Folder: "family", Chat: "telegram:-100", RequiresTrigger: true},
		{Folder: "work", Chat: "slack:C1", RequiresTrigger: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	router := agent.New(agent.Options{Store: st, Groups: set, GroupsDir: filepath.Join(dir, "groups"), Log: quiet})
	reg := mediaregistry.New(st.DB, 0)
	var out bytes.Buffer
	// The posting limits would refuse the benchmark's loop after 20
	// messages; what is measured is the path behind them.
	w, err := web.New(web.Config{Enabled: true, Listen: "127.0.0.1:0", PostsPerMinute: 1 << 30, RoomPostsPerMinute: 1 << 30}, channels.Env{Registry: reg, Sink: router, Log: quiet, AssistantName: "Andy"},
		web.Options{DataDir: dir, MaxUploadBytes: 10 << 20, Groups: set, Store: st, Model: "anthropic/claude-sonnet-4-5", Out: &out})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	if err := w.Start(runCtx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stop(); w.Wait() })
	r := &rig{b: b, w: w, h: w.Handler(), st: st, reg: reg}
	r.login(tokenLine.FindStringSubmatch(out.String())[1])
	return r
}

func (r *rig) do(req *http.Request) *httptest.ResponseRecorder {
	req.Host = "127.0.0.1"
	for _, c := range r.cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		r.cookies = append(r.cookies, c)
	}
	return rec
}

func (r *rig) login(token string) {
	page := r.do(httptest.NewRequest(http.MethodGet, "/login", nil)).Body.String()
	form := url.Values{"csrf": {hiddenCSRF.FindStringSubmatch(page)[1]}, "token": {token}}
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rec := r.do(req); rec.Code != http.StatusSeeOther {
		r.b.Fatalf("login: %d", rec.Code)
	}
	r.csrf = dataCSRF.FindStringSubmatch(r.do(httptest.NewRequest(http.MethodGet, "/r/main", nil)).Body.String())[1]
}

// body is one posted message: multipart, as the page sends it.
func body(text string, img []byte) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("name", "Ann")
	mw.WriteField("text", text)
	if img != nil {
		fw, _ := mw.CreateFormFile("file", "photo.png")
		fw.Write(img)
	}
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

// BenchmarkWebIngest is the receive path of a busy room: a posted message
// (multipart) → the room's row in the database → the agent's router
// stores chat and message in SQLite. "text" is text only; "photos" has three in ten messages carry a
// 20 KB photo, streamed to the channel's folder and registered as a ref,
// which adds two file creations each (the bytes and their record), so its
// figure follows the disk. Reports messages per second.
func BenchmarkWebIngest(b *testing.B) {
	var imgBuf bytes.Buffer
	png.Encode(&imgBuf, image.NewRGBA(image.Rect(0, 0, 120, 120)))
	img := append(imgBuf.Bytes(), bytes.Repeat([]byte{0}, 20<<10)...)
	for _, tc := range []struct {
		name      string
		photoOf10 int
	}{{"text", 0}, {"photos", 3}} {
		b.Run(tc.name, func(b *testing.B) {
			r := newRig(b)
			ctText, bodyText := body("see you at the station at six, bring the tickets please", nil)
			ctImg, bodyImg := body("look at this one", img)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ct, bd := ctText, bodyText
				if i%10 < tc.photoOf10 {
					ct, bd = ctImg, bodyImg
				}
				req := httptest.NewRequest(http.MethodPost, "/r/main/messages", bytes.NewReader(bd))
				req.Header.Set("Content-Type", ct)
				req.Header.Set("X-CSRF-Token", r.csrf)
				req.Header.Set("Accept", "application/json")
				if rec := r.do(req); rec.Code != http.StatusOK {
					b.Fatalf("message %d: %d %s", i, rec.Code, rec.Body.String())
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			var n int
			if err := r.st.DB.QueryRow(`SELECT COUNT(*) FROM messages`).Scan(&n); err != nil || n != b.N {
				b.Fatalf("stored %d of %d messages (%v)", n, b.N, err)
			}
		})
	}
}

// BenchmarkDashboard10kRuns is the dashboard page with 10,000 runs over
// the last 30 days in three groups (each with a transcript that calls
// tools) and 3,000 refs: recent runs with their tools, runs and media per
// day for the charts, media per group. Reports milliseconds per page.
func BenchmarkDashboard10kRuns(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	now := time.Now()
	folders := []string{"main", "family", "work"}
	chats := []string{"web:main", "telegram:-100", "slack:C1"}
	for i, c := range chats {
		r.st.UpsertChat(ctx, store.Chat{ID: c, Name: folders[i]})
	}
	seq, _ := r.st.PutMessage(ctx, store.Message{ChatID: "web:main", ID: "q", SenderName: "Ann", Text: "@Andy what is in the photo?", Time: now})
	call, _ := json.Marshal([]map[string]any{{"kind": "text", "text": "let me look"},
		{"kind": "tool_call", "tool_call": map[string]any{"id": "1", "name": "fetch_media", "args": map[string]string{"mediaRef": "wb_x"}}}})
	result, _ := json.Marshal([]map[string]any{{"kind": "tool_result", "tool_result": map[string]any{"call_id": "1", "content": []any{}}}})
	answer, _ := json.Marshal([]map[string]any{{"kind": "text", "text": "It is a sunset over the sea."}})
	for i := 0; i < 10_000; i++ {
		started := now.Add(-time.Duration(i) * (30 * 24 * time.Hour / 10_000))
		run := store.AgentRun{ID: fmt.Sprintf("run-%05d", i), Folder: folders[i%3], Started: started, Finished: started.Add(1500 * time.Millisecond),
			Outcome: "answered", UpToSeq: seq, Iterations: 2, InputTokens: 2400, OutputTokens: 180, CostMicrocents: 1_000_000, CostKnown: true}
		entries := []store.TranscriptEntry{{Role: "user", Parts: answer}, {Role: "assistant", Parts: call}, {Role: "tool", Parts: result}, {Role: "assistant", Parts: answer}}
		if err := r.st.SaveRun(ctx, run, entries); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 3000; i++ {
		at := now.Add(-time.Duration(i) * (14 * 24 * time.Hour / 3000))
		r.reg.SetClock(func() time.Time { return at })
		ref := &mediaregistry.MediaReference{Channel: "web", Chat: chats[i%3], Kind: mediaregistry.Image, Size: 2 << 20, Private: []byte("f")}
		if err := r.reg.Register(ctx, ref); err != nil {
			b.Fatal(err)
		}
		if i%20 == 0 {
			r.reg.Downloaded(ctx, ref.ID, ref.Size)
		}
	}
	r.reg.SetClock(time.Now)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := r.do(httptest.NewRequest(http.MethodGet, "/admin", nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "run-00000") {
			b.Fatalf("dashboard: %d\n%s", rec.Code, rec.Body.String())
		}
		io.Copy(io.Discard, rec.Body)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/page")
}
