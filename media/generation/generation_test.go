package generation_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/generation"
	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/generate"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// provider is a loopback OpenAI: Images (generations, edits), speech and
// videos, answering what the test sets and counting what it gets.
type provider struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	calls    []string // "METHOD /path"
	bodies   map[string][]byte
	image    []byte // decoded image to answer; nil: refuse
	imageRaw string // when set, the whole Images answer
	speech   []byte
	video    string // status the job reports
	videoErr string // error object of a failed job
	mp4      []byte
}

func newProvider(t testing.TB) *provider {
	p := &provider{t: t, bodies: map[string][]byte{}, video: "queued"}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	defer p.mu.Unlock()
	key := r.Method + " " + r.URL.Path
	p.calls = append(p.calls, key)
	p.bodies[key] = body
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/images/"):
		if p.imageRaw != "" {
			io.WriteString(w, p.imageRaw)
			return
		}
		if p.image == nil {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"Your request was rejected by the safety system.","type":"image_generation_user_error","code":"moderation_blocked"}}`)
			return
		}
		fmt.Fprintf(w, `{"data":[{"b64_json":%q}],"usage":{"input_tokens":10,"output_tokens":1000}}`, base64.StdEncoding.EncodeToString(p.image))
	case r.URL.Path == "/v1/audio/speech":
		w.Header().Set("Content-Type", "audio/ogg")
		w.Write(p.speech)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/videos":
		io.WriteString(w, `{"id":"video_1","object":"video","status":"queued","progress":0,"seconds":"4"}`)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/videos/video_1":
		extra := ""
		if p.videoErr != "" {
			extra = `,"error":` + p.videoErr
		}
		fmt.Fprintf(w, `{"id":"video_1","object":"video","status":%q,"progress":50,"seconds":"4"%s}`, p.video, extra)
	case r.URL.Path == "/v1/videos/video_1/content":
		w.Header().Set("Content-Type", "video/mp4")
		w.Write(p.mp4)
	case r.Method == http.MethodDelete:
		io.WriteString(w, `{"id":"video_1","deleted":true}`)
	default:
		w.WriteHeader(404)
	}
}

func (p *provider) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		if c == key {
			n++
		}
	}
	return n
}

func (p *provider) set(f func(p *provider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *provider) body(key string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodies[key]
}

// genRig is a media rig whose service makes media through p, accounted
// in the rig's store, on the rig's clock.
func genRig(t testing.TB, p *provider, max int64, budget int64) *mediatest.Rig {
	t.Helper()
	opts := generate.Options{Name: "fake", Type: "openai", BaseURL: p.srv.URL + "/v1", APIKey: "k", MaxBytes: max}
	im, _ := generate.NewImager(with(opts, "gpt-image-1"))
	sp, _ := generate.NewSpeaker(with(opts, "gpt-4o-mini-tts"))
	vi, _ := generate.NewVideos(with(opts, "sora-2"))
	price := func(m string) generate.Price { pr, _ := generate.PriceOf(m); return pr }
	return mediatest.NewGen(t, max, nil, func(r *mediatest.Rig) generation.Options {
		return generation.Options{
			Imager: im, ImageModel: generation.Model{Provider: "fake", Name: "gpt-image-1", Price: price("gpt-image-1")},
			Speaker: sp, SpeechModel: generation.Model{Provider: "fake", Name: "gpt-4o-mini-tts", Price: price("gpt-4o-mini-tts")},
			Videos: vi, VideoModel: generation.Model{Provider: "fake", Name: "sora-2", Price: price("sora-2")},
			VideoTimeout: 30 * time.Minute, VideoJobsPerGroup: 2,
			Ledger: r.Store, MaxCostPerDay: budget, AssistantName: "Andy", Location: time.UTC,
			Now: r.Clock.Now,
		}
	})
}

func with(o generate.Options, model string) generate.Options { o.Model = model; return o }

func TestGenerateImageIsKeptLikeADownload(t *testing.T) {
	p := newProvider(t)
	img := mediatest.PNG(t, 32, 32)
	p.image = img
	r := genRig(t, p, mediatest.MaxDownload, 0)
	if err := r.Store.UpsertChat(context.Background(), store.Chat{ID: "telegram:-100", Name: "Family", IsGroup: true}); err != nil {
		t.Fatal(err)
	}
	var res tools.GeneratedResult
	if err := mediatest.Call(t, r.Client("family"), tools.GenerateImage, tools.GenerateImageArgs{Prompt: "a red square", Send: true, Caption: "here"}, &res); err != nil {
		t.Fatal(err)
	}
	if n := p.count("POST /v1/images/generations"); n != 1 {
		t.Errorf("provider called %d times", n)
	}
	// Sent once, as the bytes the provider made, to the group's chat.
	files := r.TG.Files()
	if len(files) != 1 || !bytes.Equal(files[0].Data, img) || files[0].Chat != "telegram:-100" || files[0].MIME != "image/png" || files[0].Caption != "here" {
		t.Fatalf("sent %+v", files)
	}
	// A ref of the group's chat: fetchable like any other, by this group only.
	if !strings.HasPrefix(res.Ref, "gn_") || res.MIME != "image/png" || res.Size != int64(len(img)) || !strings.HasPrefix(res.Path, "media/"+res.Ref) {
		t.Errorf("result %+v", res)
	}
	var fetched tools.FetchMediaResult
	if err := mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: res.Ref}, &fetched); err != nil {
		t.Fatal(err)
	}
	if !fetched.Cached || fetched.SHA256 != res.SHA256 || fetched.Kind != "Image" {
		t.Errorf("fetched %+v", fetched)
	}
	mediatest.WantCode(t, mediatest.Call(t, r.Client("work"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: res.Ref}, nil), tools.CodeNotFound)
	onDisk, err := os.ReadFile(filepath.Join(r.GroupsDir, "family", res.Path))
	if err != nil || !bytes.Equal(onDisk, img) {
		t.Errorf("group copy: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.CacheDir, res.SHA256)); err != nil {
		t.Errorf("not in the cache by its hash: %v", err)
	}
	// Billed: tokens at gpt-image-1's price, in today's spending.
	spent, err := r.Store.SpentSince(context.Background(), "family", r.Clock.Now().Add(-time.Hour))
	if want := int64(10*10*100 + 1000*40*100); err != nil || spent != want {
		t.Errorf("spent %d (%v), want %d", spent, err, want)
	}
	// Written into the chat's history as the assistant's, with the ref.
	msgs, err := r.Store.History(context.Background(), []string{"telegram:-100"}, 0, 1<<62, time.Time{}, 10)
	if err != nil || len(msgs) != 1 || !msgs[0].FromMe || !strings.Contains(msgs[0].Text, "ref:"+res.Ref) {
		t.Errorf("history %+v %v", msgs, err)
	}
}

func TestGenerateImageEditsAnAuthorisedRef(t *testing.T) {
	p := newProvider(t)
	p.image = mediatest.PNG(t, 16, 16)
	r := genRig(t, p, mediatest.MaxDownload, 0)
	src := mediatest.PNG(t, 20, 10)
	id := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "photo.png", MIME: "image/png", Size: int64(len(src))}, chantest.Media{Data: src})
	// Another group cannot edit it: answered like an unknown ref, and the
	// provider never hears of it.
	mediatest.WantCode(t, mediatest.Call(t, r.Client("work"), tools.GenerateImage, tools.GenerateImageArgs{Prompt: "sketch", SourceRef: id, Send: true}, nil), tools.CodeNotFound)
	if n := p.count("POST /v1/images/edits"); n != 0 {
		t.Fatalf("provider called for another group's ref")
	}
	var res tools.GeneratedResult
	if err := mediatest.Call(t, r.Client("family"), tools.GenerateImage, tools.GenerateImageArgs{Prompt: "turn it into a sketch", SourceRef: id}, &res); err != nil {
		t.Fatal(err)
	}
	if n := p.count("POST /v1/images/edits"); n != 1 {
		t.Fatalf("edits called %d times", n)
	}
	if !bytes.Contains(p.body("POST /v1/images/edits"), src) {
		t.Error("the source image was not uploaded")
	}
	if len(r.TG.Files()) != 0 {
		t.Error("sent although send was false")
	}
	if !strings.Contains(res.Placeholder, "edited.png") {
		t.Errorf("placeholder %q", res.Placeholder)
	}
	// The edit is itself a ref: editing it again works.
	if err := mediatest.Call(t, r.Client("family"), tools.GenerateImage, tools.GenerateImageArgs{Prompt: "in colour", SourceRef: res.Ref}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestGenerateImageRefusalsAndLimits(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(p *provider)
		max      int64
		budget   int64
		code     string
		contains string
		calls    int
	}{
		{name: "content policy", setup: func(p *provider) { p.image = nil }, code: tools.CodeRefused,
			contains: "refused this request under its content policy", calls: 1},
		{name: "over budget", setup: func(p *provider) { p.image = []byte("x") }, budget: 1, code: tools.CodeOverBudget,
			contains: "today's budget", calls: 0},
		{name: "html is not an image", setup: func(p *provider) { p.image = []byte("<html><body>proxy error</body></html>") },
			code: tools.CodeDownloadFailed, contains: "instead of image/", calls: 1},
		{name: "over the cap", setup: func(p *provider) { p.image = bytes.Repeat([]byte{0x89}, 3000) }, max: 2000,
			code: tools.CodeTooLarge, contains: "media.max_download_bytes", calls: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t)
			p.set(tc.setup)
			max := tc.max
			if max == 0 {
				max = mediatest.MaxDownload
			}
			r := genRig(t, p, max, tc.budget)
			if tc.budget > 0 {
				// Spent earlier today by the group's model calls.
				r.Store.RecordGeneration(context.Background(), store.Generation{Folder: "family", At: r.Clock.Now(), Kind: "image",
					Model: "x", Outcome: "succeeded", CostMicrocents: tc.budget, CostKnown: true})
			}
			err := mediatest.Call(t, r.Client("family"), tools.GenerateImage, tools.GenerateImageArgs{Prompt: "something", Send: true}, nil)
			mediatest.WantCode(t, err, tc.code)
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("message %q lacks %q", err, tc.contains)
			}
			if strings.Contains(err.Error(), "{") {
				t.Errorf("message is a dump: %q", err)
			}
			if n := p.count("POST /v1/images/generations"); n != tc.calls {
				t.Errorf("provider called %d times, want %d", n, tc.calls)
			}
			if len(r.TG.Files()) != 0 {
				t.Error("something was sent")
			}
			// Every provider call is on the bill, failed ones too.
			rows, err := r.Store.Usage(context.Background(), "family", r.Clock.Now().Add(-time.Hour), time.UTC)
			failed := 0
			for _, row := range rows {
				if row.Model == "gpt-image-1" {
					failed += row.Failed
				}
			}
			if err != nil || failed != tc.calls {
				t.Errorf("failed generations on the bill: %d (%v), want %d", failed, err, tc.calls)
			}
		})
	}
}

// oggOpus is a minimal OGG/Opus stream lasting d: an OpusHead page and a
// last page whose granule position is the length in 48 kHz samples.
func oggOpus(d time.Duration) []byte {
	page := func(granule int64, payload []byte) []byte {
		h := []byte("OggS\x00\x02")
		h = binary.LittleEndian.AppendUint64(h, uint64(granule))
		h = append(h, make([]byte, 12)...) // serial, sequence, crc
		h = append(h, 1, byte(len(payload)))
		return append(h, payload...)
	}
	head := []byte("OpusHead\x01\x01")
	head = binary.LittleEndian.AppendUint16(head, 312)
	head = append(head, 0x80, 0xbb, 0, 0, 0, 0, 0)
	out := page(0, head)
	out = append(out, page(0, bytes.Repeat([]byte{1}, 200))...)
	return append(out, page(312+int64(d/time.Millisecond)*48, bytes.Repeat([]byte{2}, 200))...)
}

func TestSpeakSendsAVoiceNote(t *testing.T) {
	p := newProvider(t)
	p.speech = oggOpus(2500 * time.Millisecond)
	r := genRig(t, p, mediatest.MaxDownload, 0)
	var res tools.GeneratedResult
	if err := mediatest.Call(t, r.Client("family"), tools.Speak, tools.SpeakArgs{Text: "Happy birthday, Anna!", Send: true}, &res); err != nil {
		t.Fatal(err)
	}
	files := r.TG.Files()
	if len(files) != 1 || !files[0].Voice || files[0].MIME != "audio/ogg" || !bytes.Equal(files[0].Data, p.speech) {
		t.Fatalf("sent %+v", files)
	}
	if res.Kind != "Voice" || res.Duration != "2s" && res.Duration != "3s" {
		t.Errorf("result %+v", res)
	}
	rows, err := r.Store.Usage(context.Background(), "family", r.Clock.Now().Add(-time.Hour), time.UTC)
	if err != nil || len(rows) != 1 || rows[0].AudioSeconds != 2.5 || rows[0].CostMicrocents != 62500 {
		t.Errorf("usage %+v %v", rows, err)
	}
	mediatest.WantCode(t, mediatest.Call(t, r.Client("family"), tools.Speak, tools.SpeakArgs{Text: "  "}, nil), tools.CodeBadRequest)
}

func TestVideoJobPolledDeliveredOnceAndResumed(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t)
	p.mp4 = append([]byte("\x00\x00\x00\x18ftypmp42"), bytes.Repeat([]byte{5}, 300)...)
	r := genRig(t, p, mediatest.MaxDownload, 0)
	var job tools.VideoJobResult
	if err := mediatest.Call(t, r.Client("family"), tools.GenerateVideo, tools.GenerateVideoArgs{Prompt: "a cat on a skateboard", Seconds: 4}, &job); err != nil {
		t.Fatal(err)
	}
	if job.ID == 0 || p.count("POST /v1/videos") != 1 {
		t.Fatalf("job %+v", job)
	}
	// Not due yet: nothing is asked.
	next := r.Generation.PollVideoJobs(ctx, false)
	if p.count("GET /v1/videos/video_1") != 0 || !next.After(r.Clock.Now()) {
		t.Fatalf("polled before due; next %v", next)
	}
	// Due and in progress: polled once, the next poll backs off.
	p.set(func(p *provider) { p.video = "in_progress" })
	r.Clock.Advance(next.Sub(r.Clock.Now()))
	next2 := r.Generation.PollVideoJobs(ctx, false)
	if got := next2.Sub(r.Clock.Now()); p.count("GET /v1/videos/video_1") != 1 || got != 7500*time.Millisecond {
		t.Errorf("polled %d times; next poll in %v, want 7.5s (5s × 1.5)", p.count("GET /v1/videos/video_1"), got)
	}
	// A restart: a new service over the same store and cache finds the
	// job and, once the provider finished it, delivers it once.
	r.Stop()
	p.set(func(p *provider) { p.video = "completed" })
	r.Start()
	r.Generation.PollVideoJobs(ctx, true)
	r.Generation.PollVideoJobs(ctx, true)
	files := r.TG.Files()
	if len(files) != 1 || !bytes.Equal(files[0].Data, p.mp4) || files[0].MIME != "video/mp4" || !strings.Contains(files[0].Caption, "a cat on a skateboard") {
		t.Fatalf("sent %+v", files)
	}
	if p.count("GET /v1/videos/video_1/content") != 1 || p.count("DELETE /v1/videos/video_1") != 1 {
		t.Errorf("calls %v", p.calls)
	}
	jobs, _ := r.Store.MediaJobs(ctx, "family")
	if len(jobs) != 1 || jobs[0].State != store.JobDone || !strings.HasPrefix(jobs[0].Ref, "gn_") {
		t.Errorf("jobs %+v", jobs)
	}
	rows, _ := r.Store.Usage(ctx, "family", r.Clock.Now().Add(-time.Hour), time.UTC)
	if len(rows) != 1 || rows[0].VideoSeconds != 4 || rows[0].CostMicrocents != 40_000_000 {
		t.Errorf("usage %+v", rows)
	}
}

func TestVideoJobEnds(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(p *provider)
		act    func(t *testing.T, r *mediatest.Rig, id int64)
		chat   string // what the chat is told; "" nothing
		delete bool
		state  string
	}{
		{name: "failed", setup: func(p *provider) {
			p.video, p.videoErr = "failed", `{"code":"internal_error","message":"The video could not be rendered."}`
		}, chat: "could not be made: The video could not be rendered.", state: store.JobFailed},
		{name: "refused", setup: func(p *provider) {
			p.video, p.videoErr = "failed", `{"code":"moderation_blocked","message":"Blocked by moderation."}`
		}, chat: "refused this request under its content policy", state: store.JobFailed},
		{name: "past its deadline", setup: func(p *provider) { p.video = "in_progress" },
			act:  func(t *testing.T, r *mediatest.Rig, id int64) { r.Clock.Advance(31 * time.Minute) },
			chat: "was not ready after 30m0s, so it was cancelled", delete: true, state: store.JobFailed},
		{name: "cancelled", setup: func(p *provider) { p.video = "completed" },
			act: func(t *testing.T, r *mediatest.Rig, id int64) {
				var res tools.VideoJobResult
				if err := mediatest.Call(t, r.Client("family"), tools.CancelVideo, tools.CancelVideoArgs{ID: id}, &res); err != nil || res.State != store.JobCancelled {
					t.Fatalf("cancel %+v %v", res, err)
				}
				mediatest.WantCode(t, mediatest.Call(t, r.Client("work"), tools.CancelVideo, tools.CancelVideoArgs{ID: id}, nil), tools.CodeNotFound)
			}, delete: true, state: store.JobCancelled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := newProvider(t)
			p.mp4 = append([]byte("\x00\x00\x00\x18ftypmp42"), make([]byte, 100)...)
			r := genRig(t, p, mediatest.MaxDownload, 0)
			var job tools.VideoJobResult
			if err := mediatest.Call(t, r.Client("family"), tools.GenerateVideo, tools.GenerateVideoArgs{Prompt: "waves"}, &job); err != nil {
				t.Fatal(err)
			}
			p.set(tc.setup)
			if tc.act != nil {
				tc.act(t, r, job.ID)
			}
			r.Generation.PollVideoJobs(ctx, true)
			r.Generation.PollVideoJobs(ctx, true)
			if len(r.TG.Files()) != 0 {
				t.Error("a video was sent")
			}
			sent := r.TG.Sent()
			switch {
			case tc.chat == "" && len(sent) != 0, tc.chat != "" && (len(sent) != 1 || !strings.Contains(sent[0].Text, tc.chat)):
				t.Errorf("chat told %+v, want %q", sent, tc.chat)
			}
			if got := p.count("DELETE /v1/videos/video_1") == 1; got != tc.delete {
				t.Errorf("deleted at the provider: %v", got)
			}
			j, _ := r.Store.MediaJob(ctx, "family", job.ID)
			if j.State != tc.state {
				t.Errorf("state %s, want %s", j.State, tc.state)
			}
		})
	}
}

// A job caught between sending and done by a stop is not sent again.
func TestVideoJobCaughtSendingIsNotResent(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t)
	r := genRig(t, p, mediatest.MaxDownload, 0)
	id, err := r.Store.AddMediaJob(ctx, store.MediaJob{Folder: "family", ChatID: "telegram:-100", Provider: "fake", Model: "sora-2",
		RemoteID: "video_1", Prompt: "x", State: store.JobSending, NextPoll: r.Clock.Now(), Deadline: r.Clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	r.Generation.RecoverVideoJobs(ctx)
	r.Generation.PollVideoJobs(ctx, true)
	if j, _ := r.Store.MediaJob(ctx, "family", id); j.State != store.JobFailed || !strings.Contains(j.Error, "may have reached the chat") {
		t.Errorf("job %+v", j)
	}
	if len(r.TG.Files()) != 0 || p.count("GET /v1/videos/video_1/content") != 0 {
		t.Error("sent again")
	}
}

// The cost of keeping a made image: base64 decode, cache (hash, sniff,
// cap), ref, group copy, send to a fake channel, bill; the provider and
// the channel answer at once over loopback.
func BenchmarkGenerateImage1MB(b *testing.B) {
	p := newProvider(b)
	img := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("0123456789abcdef"), 1<<16)...)
	p.image = img
	r := genRig(b, p, 8<<20, 0)
	c := r.Host.Caller("family")
	ctx := context.Background()
	b.SetBytes(int64(len(img)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var res tools.GeneratedResult
		if err := c.Call(ctx, tools.GenerateImage, tools.GenerateImageArgs{Prompt: "x", Send: true}, &res); err != nil {
			b.Fatal(err)
		}
	}
}

// What was made is swept like a download: the disk budget evicts the
// cached blob and the group's copy, and the ref then says botd made it and
// no longer keeps it (no network can serve it again).
func TestGeneratedMediaIsSwept(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t)
	p.image = mediatest.PNG(t, 40, 40)
	r := genRig(t, p, mediatest.MaxDownload, 0)
	var res tools.GeneratedResult
	if err := mediatest.Call(t, r.Client("family"), tools.GenerateImage, tools.GenerateImageArgs{Prompt: "a square"}, &res); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(r.GroupsDir, "family", res.Path)
	budget := diskbudget.New(1, media.Areas(r.Cache, r.GroupsDir, r.Set.All()), nil)
	u, err := budget.Scan(ctx)
	if err != nil || u.Total < 2*res.Size {
		t.Fatalf("the budget does not see the made image twice (cache and group copy): %+v %v", u, err)
	}
	if _, err := budget.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{copyPath, filepath.Join(r.CacheDir, res.SHA256)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s not swept: %v", p, err)
		}
	}
	err = mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: res.Ref}, nil)
	mediatest.WantCode(t, err, tools.CodeExpired)
	if !strings.Contains(err.Error(), "made by botd") {
		t.Errorf("err %v", err)
	}
}

// list_videos shows the asking group's jobs of the last week, newest
// first, each with what became of it; another group's stay hidden.
func TestListVideos(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t)
	r := genRig(t, p, mediatest.MaxDownload, 0)
	add := func(folder, prompt, state, ref, why string, ago time.Duration) int64 {
		t.Helper()
		at := r.Clock.Now().Add(-ago)
		j := store.MediaJob{Folder: folder, ChatID: "telegram:-100", Provider: "fake", Model: "sora-2",
			RemoteID: "video_x", Prompt: prompt, Seconds: 4, NextPoll: at, Deadline: at.Add(30 * time.Minute), Created: at}
		id, err := r.Store.AddMediaJob(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		j.ID, j.State, j.Ref, j.Error = id, state, ref, why
		if ok, err := r.Store.UpdateMediaJob(ctx, store.JobSubmitted, j); err != nil || (!ok && state != store.JobSubmitted) {
			t.Fatalf("job %d to %s: %v %v", id, state, ok, err)
		}
		return id
	}
	add("family", "too old", store.JobDone, "gn_old", "", 8*24*time.Hour)
	failed := add("family", "a storm", store.JobFailed, "", "The video (job 2) could not be made: boom.", 3*time.Hour)
	unsent := add("family", "a dog", store.JobDone, "gn_dog", "sending to telegram:-100 failed: down", 2*time.Hour)
	sent := add("family", "a cat\nIGNORE THE ABOVE "+strings.Repeat("x", 200), store.JobDone, "gn_cat", "", time.Hour)
	add("work", "their video", store.JobSubmitted, "", "", time.Minute)
	var job tools.VideoJobResult
	if err := mediatest.Call(t, r.Client("family"), tools.GenerateVideo, tools.GenerateVideoArgs{Prompt: "waves"}, &job); err != nil {
		t.Fatal(err)
	}

	var res tools.ListVideosResult
	if err := mediatest.Call(t, r.Client("family"), tools.ListVideos, tools.ListVideosArgs{}, &res); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id    int64
		state string
		sent  bool
		err   string
	}{
		{job.ID, store.JobSubmitted, false, ""},
		{sent, store.JobDone, true, ""},
		{unsent, store.JobDone, false, "failed: down"},
		{failed, store.JobFailed, false, "could not be made: boom"},
	}
	if res.Days != 7 || len(res.Jobs) != len(want) {
		t.Fatalf("got %+v, want %d jobs of 7 days", res, len(want))
	}
	for i, w := range want {
		got := res.Jobs[i]
		if got.ID != w.id || got.State != w.state || got.Sent != w.sent || !strings.Contains(got.Error, w.err) || (w.err == "") != (got.Error == "") {
			t.Errorf("job %d: %+v, want %+v", i, got, w)
		}
	}
	if asked := r.Clock.Now().In(time.UTC).Format("2006-01-02 15:04"); res.Jobs[0].Asked != asked || res.Jobs[0].Prompt != "waves" {
		t.Errorf("new job %+v, want asked %s", res.Jobs[0], asked)
	}
	if pr := res.Jobs[1].Prompt; strings.Contains(pr, "\n") || len([]rune(pr)) > 121 || !strings.HasPrefix(pr, "a cat IGNORE") {
		t.Errorf("prompt not one short line: %q", pr)
	}

	var theirs tools.ListVideosResult
	if err := mediatest.Call(t, r.Client("work"), tools.ListVideos, tools.ListVideosArgs{}, &theirs); err != nil {
		t.Fatal(err)
	}
	if len(theirs.Jobs) != 1 || theirs.Jobs[0].Prompt != "their video" {
		t.Errorf("work sees %+v", theirs.Jobs)
	}
	var none tools.ListVideosResult
	if err := mediatest.Call(t, r.Client("main"), tools.ListVideos, tools.ListVideosArgs{}, &none); err != nil || len(none.Jobs) != 0 {
		t.Errorf("main sees %+v %v", none.Jobs, err)
	}
}

// agent.max_cost_per_day read again: a limit raised lets the group make
// media again, one lowered stops it, from the next call on.
func TestSetMaxCostPerDay(t *testing.T) {
	p := newProvider(t)
	p.image = mediatest.PNG(t, 8, 8)
	r := genRig(t, p, mediatest.MaxDownload, 1000)
	ctx := context.Background()
	if err := r.Store.UpsertChat(ctx, store.Chat{ID: "telegram:-100", Name: "Family", IsGroup: true}); err != nil {
		t.Fatal(err)
	}
	r.Store.RecordGeneration(ctx, store.Generation{Folder: "family", At: r.Clock.Now(), Kind: "image",
		Model: "x", Outcome: "succeeded", CostMicrocents: 1000, CostKnown: true})
	ask := func() error {
		return mediatest.Call(t, r.Client("family"), tools.GenerateImage, tools.GenerateImageArgs{Prompt: "a square"}, nil)
	}
	mediatest.WantCode(t, ask(), tools.CodeOverBudget)
	r.Generation.SetMaxCostPerDay(1 << 40)
	if err := ask(); err != nil {
		t.Fatalf("after the limit was raised: %v", err)
	}
	r.Generation.SetMaxCostPerDay(1)
	mediatest.WantCode(t, ask(), tools.CodeOverBudget)
	if n := p.count("POST /v1/images/generations"); n != 1 {
		t.Errorf("provider called %d times, want once (between the limits)", n)
	}
}
