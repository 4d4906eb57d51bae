package transcribe_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/llmfake"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/transcribe"
)

const testKey = "sk-test-9f8e7d6c5b4a"

// openStore opens (and migrates) the database at path.
func openStore(t testing.TB, path string) *sql.DB {
	t.Helper()
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.DB
}

func newDB(t testing.TB) *sql.DB { return openStore(t, filepath.Join(t.TempDir(), "botd.db")) }

// audioBytes is n reproducible bytes that differ by seed.
func audioBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func newT(t testing.TB, o transcribe.Options) *transcribe.Transcriber {
	t.Helper()
	if o.Type == "" {
		o.Type = "openai"
	}
	if o.Model == "" {
		o.Model = "whisper-1"
	}
	if o.Name == "" {
		o.Name = "groq"
	}
	tr, err := transcribe.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// received is what the fake OpenAI-compatible server saw in one upload.
type received struct {
	Method, Path, Auth string
	ContentLength      int64
	BodyLen            int64
	Fields             map[string]string
	FileName, PartType string
	File               []byte
}

// readUpload parses a multipart transcription request.
func readUpload(r *http.Request) (received, error) {
	got := received{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), ContentLength: r.ContentLength, Fields: map[string]string{}}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return got, err
	}
	got.BodyLen = int64(len(body))
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return got, fmt.Errorf("content type %q: %v", r.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return got, err
		}
		if p.FormName() == "file" {
			got.FileName, got.PartType, got.File = p.FileName(), p.Header.Get("Content-Type"), b
		} else {
			got.Fields[p.FormName()] = string(b)
		}
	}
}

// fakeOpenAI is an OpenAI-compatible transcription server on loopback
// (llmfake's) that answers every upload with answer and keeps what it
// received, parsed.
type fakeOpenAI struct {
	*llmfake.Server
	calls atomic.Int64
	mu    sync.Mutex
	got   []received
}

func newFakeOpenAI(t testing.TB, answer func(w http.ResponseWriter, got received)) *fakeOpenAI {
	f := &fakeOpenAI{}
	f.Server = llmfake.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		got, err := readUpload(r)
		if err != nil {
			t.Errorf("fake server: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.got = append(f.got, got)
		f.mu.Unlock()
		answer(w, got)
	}))
	return f
}

func (f *fakeOpenAI) last() received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[len(f.got)-1]
}

func jsonAnswer(body string) func(http.ResponseWriter, received) {
	return func(w http.ResponseWriter, _ received) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func TestOpenAIRequestShape(t *testing.T) {
	tests := []struct {
		name                string
		model, key, baseDir string
		file, mime          string
		answerType, answer  string
		wantFile, wantType  string
		wantFormat          string
		want                transcribe.Transcript
	}{
		{
			name: "telegram voice note to whisper", model: "whisper-1", key: testKey, baseDir: "/v1",
			file: "", mime: "audio/ogg; codecs=opus",
			answerType: "application/json", answer: `{"task":"transcribe","language":"german","duration":12.5,"text":" Hallo, bis gleich. ","segments":[]}`,
			wantFile: "audio.ogg", wantType: "audio/ogg", wantFormat: "verbose_json",
			want: transcribe.Transcript{Text: "Hallo, bis gleich.", Language: "german", Duration: 12500 * time.Millisecond, Model: "whisper-1"},
		},
		{
			name: "m4a to a json-only model, base url with a slash", model: "gpt-4o-mini-transcribe", key: testKey, baseDir: "/v1/",
			file: "Memo 2024 (Büro).m4a", mime: "audio/mp4",
			answerType: "application/json", answer: `{"text":"Call me back.","usage":{"type":"duration","seconds":3}}`,
			wantFile: "Memo_2024__B_ro.m4a", wantType: "audio/mp4", wantFormat: "json",
			want: transcribe.Transcript{Text: "Call me back.", Duration: 3 * time.Second, Model: "gpt-4o-mini-transcribe"},
		},
		{
			name: "local server without a key answers plain text", model: "Systran/faster-whisper-small", key: "", baseDir: "/openai/v1",
			file: `../../"evil".bin`, mime: "audio/mpeg",
			answerType: "text/plain; charset=utf-8", answer: "just text\n",
			wantFile: "evil.mp3", wantType: "audio/mpeg", wantFormat: "verbose_json",
			want: transcribe.Transcript{Text: "just text", Model: "Systran/faster-whisper-small"},
		},
		{
			name: "unknown type keeps the name", model: "whisper-large-v3", key: testKey, baseDir: "",
			file: "talk.flac", mime: "application/octet-stream",
			answerType: "application/json", answer: `{"text":"ok","language":"en","duration":"61.0"}`,
			wantFile: "talk.flac", wantType: "application/octet-stream", wantFormat: "verbose_json",
			want: transcribe.Transcript{Text: "ok", Language: "en", Duration: 61 * time.Second, Model: "whisper-large-v3"},
		},
		{
			name: "json sent as text/plain", model: "parakeet-tdt", key: testKey, baseDir: "/v1",
			file: "n.wav", mime: "audio/wav",
			answerType: "text/plain", answer: `{"text":"json in disguise"}`,
			wantFile: "n.wav", wantType: "audio/wav", wantFormat: "json",
			want: transcribe.Transcript{Text: "json in disguise", Model: "parakeet-tdt"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			audio := audioBytes(uint64(i), 70_000+i)
			f := newFakeOpenAI(t, func(w http.ResponseWriter, _ received) {
				w.Header().Set("Content-Type", tt.answerType)
				io.WriteString(w, tt.answer)
			})
			tr := newT(t, transcribe.Options{BaseURL: f.URL + tt.baseDir, APIKey: tt.key, Model: tt.model, DB: newDB(t)})
			got, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), tt.file, tt.mime)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("transcript = %+v, want %+v", got, tt.want)
			}
			r := f.last()
			wantPath := strings.TrimRight(tt.baseDir, "/") + "/audio/transcriptions"
			if r.Method != http.MethodPost || r.Path != wantPath {
				t.Errorf("request = %s %s, want POST %s", r.Method, r.Path, wantPath)
			}
			wantAuth := ""
			if tt.key != "" {
				wantAuth = "Bearer " + tt.key
			}
			if r.Auth != wantAuth {
				t.Errorf("Authorization = %q, want %q", r.Auth, wantAuth)
			}
			if r.ContentLength != r.BodyLen {
				t.Errorf("Content-Length %d, body %d bytes", r.ContentLength, r.BodyLen)
			}
			if r.Fields["model"] != tt.model || r.Fields["response_format"] != tt.wantFormat || len(r.Fields) != 2 {
				t.Errorf("fields = %v, want model %s, response_format %s", r.Fields, tt.model, tt.wantFormat)
			}
			if r.FileName != tt.wantFile || r.PartType != tt.wantType {
				t.Errorf("file part %q %s, want %q %s", r.FileName, r.PartType, tt.wantFile, tt.wantType)
			}
			if !bytes.Equal(r.File, audio) {
				t.Errorf("uploaded %d bytes that differ from the %d of the audio", len(r.File), len(audio))
			}
		})
	}
}

func TestVerboseJSONRefusedFallsBackToJSON(t *testing.T) {
	audio := audioBytes(7, 5000)
	f := newFakeOpenAI(t, func(w http.ResponseWriter, got received) {
		w.Header().Set("Content-Type", "application/json")
		if got.Fields["response_format"] == "verbose_json" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"response_format 'verbose_json' is not compatible with model 'whisper-x'","type":"invalid_request_error","param":"response_format","code":"unsupported_value"}}`)
			return
		}
		io.WriteString(w, `{"text":"fine"}`)
	})
	tr := newT(t, transcribe.Options{BaseURL: f.URL, APIKey: testKey, Model: "whisper-x", DB: newDB(t)})
	got, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "v.ogg", "audio/ogg")
	if err != nil || got.Text != "fine" {
		t.Fatalf("Transcribe = %+v, %v", got, err)
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("provider calls = %d, want 2 (verbose_json, then json)", n)
	}
	if r := f.last(); r.Fields["response_format"] != "json" || !bytes.Equal(r.File, audio) {
		t.Errorf("second upload: format %q, %d bytes", r.Fields["response_format"], len(r.File))
	}
}

// TestCacheSurvivesRestart transcribes, closes the database, and asks
// again through a new store and Transcriber: no second provider call.
func TestCacheSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "botd.db")
	f := newFakeOpenAI(t, jsonAnswer(`{"text":"Bring milk.","language":"english","duration":4.25}`))
	audio := audioBytes(1, 20_000)

	db1, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	first, err := newT(t, transcribe.Options{BaseURL: f.URL, Model: "whisper-1", DB: db1.DB}).
		Transcribe(ctx, bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg")
	if err != nil || first.Cached {
		t.Fatalf("first = %+v, %v; want a fresh transcript", first, err)
	}
	db1.Close()

	db2 := openStore(t, path)
	tr := newT(t, transcribe.Options{BaseURL: f.URL, Model: "whisper-1", DB: db2})
	again, err := tr.Transcribe(ctx, bytes.NewReader(audio), int64(len(audio)), "other-name.ogg", "audio/ogg")
	if err != nil {
		t.Fatal(err)
	}
	want := first
	want.Cached = true
	if again != want {
		t.Errorf("after restart = %+v, want %+v", again, want)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("provider calls = %d, want 1", n)
	}

	// Other bytes, or the same bytes for another model, are new work.
	other := audioBytes(2, 20_000)
	if _, err := tr.Transcribe(ctx, bytes.NewReader(other), int64(len(other)), "", "audio/ogg"); err != nil {
		t.Fatal(err)
	}
	big := newT(t, transcribe.Options{BaseURL: f.URL, Model: "whisper-large-v3", DB: db2})
	if got, err := big.Transcribe(ctx, bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg"); err != nil || got.Cached || got.Model != "whisper-large-v3" {
		t.Fatalf("other model = %+v, %v", got, err)
	}
	if n := f.calls.Load(); n != 3 {
		t.Errorf("provider calls = %d, want 3", n)
	}
}

// TestEmptyTranscript: no speech is an answer, not an error, and is kept.
func TestEmptyTranscript(t *testing.T) {
	f := newFakeOpenAI(t, jsonAnswer(`{"text":""}`))
	tr := newT(t, transcribe.Options{BaseURL: f.URL, Model: "gpt-4o-transcribe", DB: newDB(t)})
	audio := audioBytes(3, 999)
	for i, cached := range []bool{false, true} {
		got, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg")
		if err != nil || got.Text != "" || got.Cached != cached {
			t.Errorf("call %d = %+v, %v; want empty text, cached %v", i, got, err, cached)
		}
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("provider calls = %d, want 1", n)
	}
}

// gate is a fake provider whose answers wait for release; arrived hears of
// each request as it comes in.
type gate struct {
	arrived chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{arrived: make(chan struct{}, 16), release: make(chan struct{})} }

func TestConcurrentSameBytesShareOneCall(t *testing.T) {
	const callers = 8
	g := newGate()
	f := newFakeOpenAI(t, func(w http.ResponseWriter, _ received) {
		g.arrived <- struct{}{}
		<-g.release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"once"}`)
	})
	tr := newT(t, transcribe.Options{BaseURL: f.URL, Model: "whisper-1", DB: newDB(t)})
	joins := make(chan struct{}, callers)
	transcribe.SetJoinHook(tr, func() { joins <- struct{}{} })
	audio := audioBytes(4, 100_000)

	var wg sync.WaitGroup
	results := make([]transcribe.Transcript, callers)
	errs := make([]error, callers)
	call := func(i int) {
		defer wg.Done()
		// Each caller has a reader of its own, as fetches of one blob do.
		results[i], errs[i] = tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg")
	}
	wg.Add(callers)
	go call(0)
	<-g.arrived
	for i := 1; i < callers; i++ {
		go call(i)
	}
	for range callers - 1 {
		<-joins
	}
	close(g.release)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || results[i].Text != "once" {
			t.Errorf("caller %d: %+v, %v", i, results[i], errs[i])
		}
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("provider calls = %d, want 1", n)
	}
}

// TestCallerGivingUpDoesNotFailOthers: the caller whose upload is under
// way cancels; a caller waiting on it uploads again with its own reader.
func TestCallerGivingUpDoesNotFailOthers(t *testing.T) {
	g := newGate()
	var first atomic.Bool
	first.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if first.CompareAndSwap(true, false) {
			g.arrived <- struct{}{}
			<-r.Context().Done() // the client hung up
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"second time"}`)
	}))
	t.Cleanup(srv.Close)
	tr := newT(t, transcribe.Options{BaseURL: srv.URL, Model: "whisper-1", DB: newDB(t)})
	joins := make(chan struct{}, 1)
	transcribe.SetJoinHook(tr, func() { joins <- struct{}{} })
	audio := audioBytes(5, 3000)

	ctx, cancel := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := tr.Transcribe(ctx, bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg")
		leaderErr <- err
	}()
	<-g.arrived
	type res struct {
		tr  transcribe.Transcript
		err error
	}
	waiter := make(chan res, 1)
	go func() {
		got, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg")
		waiter <- res{got, err}
	}()
	<-joins
	cancel()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) || llm.KindOf(err) != llm.KindCancelled {
		t.Errorf("cancelled caller: %v (kind %s), want cancelled", err, llm.KindOf(err))
	}
	if r := <-waiter; r.err != nil || r.tr.Text != "second time" {
		t.Errorf("waiting caller: %+v, %v", r.tr, r.err)
	}
}

// panicky is a transport that waits for release and then panics, once.
type panicky struct {
	g    *gate
	once atomic.Bool
}

func (p *panicky) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.once.CompareAndSwap(false, true) {
		p.g.arrived <- struct{}{}
		<-p.g.release
		panic("transport exploded")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestPanicEndsTheCallForEveryone(t *testing.T) {
	f := newFakeOpenAI(t, jsonAnswer(`{"text":"after the crash"}`))
	g := newGate()
	tr := newT(t, transcribe.Options{BaseURL: f.URL, Model: "whisper-1", DB: newDB(t), HTTP: &http.Client{Transport: &panicky{g: g}}})
	joins := make(chan struct{}, 1)
	transcribe.SetJoinHook(tr, func() { joins <- struct{}{} })
	audio := audioBytes(6, 1234)
	run := func() error {
		_, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg")
		return err
	}
	errs := make(chan error, 2)
	go func() { errs <- run() }()
	<-g.arrived
	go func() { errs <- run() }()
	<-joins
	close(g.release)
	for range 2 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "crashed") {
			t.Errorf("during the panic: %v, want a crash error", err)
		}
	}
	if err := run(); err != nil {
		t.Errorf("after the panic: %v", err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("provider calls = %d, want 1", n)
	}
}

// noReads is audio that must not be read.
type noReads struct{ t *testing.T }

func (r noReads) ReadAt([]byte, int64) (int, error) {
	r.t.Error("the audio was read")
	return 0, io.EOF
}

func TestTooLargeRefusedBeforeUpload(t *testing.T) {
	f := newFakeOpenAI(t, jsonAnswer(`{"text":"no"}`))
	tests := []struct {
		name     string
		typ      string
		maxBytes int64
		size     int64
	}{
		{"configured limit", "openai", 1000, 1001},
		{"openai default", "openai", 0, transcribe.DefaultOpenAIMaxBytes + 1},
		{"gemini default", "gemini", 0, transcribe.DefaultGeminiMaxBytes + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newT(t, transcribe.Options{Type: tt.typ, BaseURL: f.URL, Model: "m", DB: newDB(t), MaxBytes: tt.maxBytes})
			_, err := tr.Transcribe(context.Background(), noReads{t}, tt.size, "long.ogg", "audio/ogg")
			if !errors.Is(err, transcribe.ErrTooLarge) || !strings.Contains(err.Error(), `"long.ogg"`) {
				t.Errorf("err = %v, want ErrTooLarge naming the file", err)
			}
		})
	}
	if n := f.calls.Load(); n != 0 {
		t.Errorf("provider calls = %d, want 0", n)
	}
}

func TestShortAudioRefused(t *testing.T) {
	f := newFakeOpenAI(t, jsonAnswer(`{"text":"no"}`))
	tr := newT(t, transcribe.Options{BaseURL: f.URL, DB: newDB(t)})
	for _, size := range []int64{0, 11} {
		if _, err := tr.Transcribe(context.Background(), bytes.NewReader(make([]byte, 10)), size, "", "audio/ogg"); err == nil {
			t.Errorf("size %d of 10 bytes: no error", size)
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Errorf("provider calls = %d, want 0", n)
	}
}

// pattern is size bytes of audio that cost no memory; it records reads
// made after done is set.
type pattern struct {
	block [64 << 10]byte
	done  atomic.Bool
	late  atomic.Int64
}

func (p *pattern) ReadAt(b []byte, off int64) (int, error) {
	if p.done.Load() {
		p.late.Add(1)
	}
	n := 0
	for n < len(b) {
		n += copy(b[n:], p.block[(off+int64(n))%int64(len(p.block)):])
	}
	return n, nil
}

func TestCancelStopsUpload(t *testing.T) {
	const size = 48 << 20
	started, hungUp := make(chan struct{}), make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.CopyN(io.Discard, r.Body, 64<<10)
		close(started)
		m, err := io.Copy(io.Discard, r.Body)
		if err == nil {
			t.Error("the whole upload arrived")
		}
		hungUp <- n + m
	}))
	t.Cleanup(srv.Close)
	tr := newT(t, transcribe.Options{BaseURL: srv.URL, DB: newDB(t), MaxBytes: 64 << 20})
	audio := &pattern{}
	for i := range audio.block {
		audio.block[i] = byte(i * 7)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := tr.Transcribe(ctx, audio, size, "long.ogg", "audio/ogg")
	audio.done.Store(true)
	if !errors.Is(err, context.Canceled) || llm.KindOf(err) != llm.KindCancelled {
		t.Errorf("err = %v, want cancelled", err)
	}
	if got := <-hungUp; got >= size {
		t.Errorf("server received %d bytes of %d", got, size)
	}
	if n := audio.late.Load(); n != 0 {
		t.Errorf("the audio was read %d times after Transcribe returned", n)
	}
}

func TestNew(t *testing.T) {
	db := newDB(t)
	tests := []struct {
		name    string
		o       transcribe.Options
		wantErr string
	}{
		{"openai", transcribe.Options{Type: "openai", Model: "whisper-1", DB: db}, ""},
		{"gemini in capitals", transcribe.Options{Type: " Gemini ", Model: "gemini-2.5-flash", DB: db}, ""},
		{"not configured", transcribe.Options{}, "set media.transcription"},
		{"anthropic", transcribe.Options{Name: "claude", Type: "anthropic", Model: "x", DB: db},
			"anthropic has no transcription API; use an openai-compatible or gemini provider"},
		{"unknown type", transcribe.Options{Name: "x", Type: "cohere", Model: "m", DB: db}, `type "cohere"`},
		{"no model", transcribe.Options{Type: "openai", DB: db}, "media.transcription.model"},
		{"no database", transcribe.Options{Type: "openai", Model: "m"}, "database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := transcribe.New(tt.o)
			switch {
			case tt.wantErr == "" && (err != nil || tr == nil):
				t.Errorf("New = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("New error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := transcribe.New(transcribe.Options{}); !errors.Is(err, transcribe.ErrNotConfigured) {
		t.Errorf("New without a type = %v, want ErrNotConfigured", err)
	}
}
