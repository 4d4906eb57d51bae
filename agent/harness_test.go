package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
	"github.com/botd-dev/botd/tools"
)

// Chats of the default test groups.
const (
	famChat  = "telegram:-1001"
	mainChat = "telegram:42"
	workChat = "slack:C0WORK"
)

func defaultGroups() []groups.Group {
	return []groups.Group{
		{Folder: "family", Name: "Family", Chat: famChat, RequiresTrigger: true},
		{Folder: "main", Name: "Me", Chat: mainChat, Main: true},
		{Folder: "work", Name: "Work", Chat: workChat, RequiresTrigger: false},
	}
}

// fakeLLM is a scripted provider: script decides each reply from the
// request, and every request is recorded (a copy) for assertions.
type fakeLLM struct {
	script func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error)
	caps   llm.Capabilities

	mu       sync.Mutex
	reqs     []llm.Request
	inflight map[string]int
	maxGroup int // most concurrent calls for one group
	total    int
	maxTotal int
}

func newFakeLLM(script func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error)) *fakeLLM {
	return &fakeLLM{script: script, caps: llm.Capabilities{Tools: true, Vision: true}, inflight: map[string]int{}}
}

func (f *fakeLLM) Name() string                   { return "fake" }
func (f *fakeLLM) Capabilities() llm.Capabilities { return f.caps }
func (f *fakeLLM) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	return nil, llm.NewError("fake", llm.KindBadRequest, "streaming is not scripted")
}

func (f *fakeLLM) Generate(ctx context.Context, req *llm.Request) (*llm.Result, error) {
	g := groupOf(req)
	f.mu.Lock()
	cp := *req
	cp.Messages = append([]llm.Message(nil), req.Messages...)
	f.reqs = append(f.reqs, cp)
	n := len(f.reqs)
	f.inflight[g]++
	f.total++
	f.maxGroup = max(f.maxGroup, f.inflight[g])
	f.maxTotal = max(f.maxTotal, f.total)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight[g]--
		f.total--
		f.mu.Unlock()
	}()
	return f.script(ctx, n, req)
}

func (f *fakeLLM) requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.reqs...)
}

func (f *fakeLLM) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// groupOf finds the group a request is for from the system prompt.
func groupOf(req *llm.Request) string {
	_, rest, ok := strings.Cut(req.System, "in a group chat (")
	if !ok {
		return "?"
	}
	name, _, _ := strings.Cut(rest, " on ")
	return name
}

func textResult(s string) *llm.Result {
	return &llm.Result{Parts: []llm.Part{llm.Text(s)}, StopReason: llm.StopEnd}
}

func toolCall(id, name, args string) *llm.Result {
	return &llm.Result{Parts: []llm.Part{llm.ToolCallPart(id, name, json.RawMessage(args))}, StopReason: llm.StopToolUse}
}

// fakeHost answers the MCP server's IPC calls the way the botd host
// would: fetch_media writes the served bytes into the group folder.
type fakeHost struct {
	groupDir string
	media    map[string]fakeMedia // by ref

	mu      sync.Mutex
	fetches map[string]int
}

type fakeMedia struct {
	Kind, Name, MIME string
	Data             []byte
	Transcript       string // what the host transcribed, for voice notes
}

func (h *fakeHost) Call(ctx context.Context, typ string, args, result any) error {
	switch typ {
	case tools.FetchMedia:
		a := args.(tools.FetchMediaArgs)
		m, ok := h.media[a.MediaRef]
		if !ok {
			return tools.Errorf(tools.CodeNotFound, "no media %s", a.MediaRef)
		}
		h.mu.Lock()
		h.fetches[a.MediaRef]++
		h.mu.Unlock()
		rel := "media/" + a.MediaRef + "_" + m.Name
		if err := os.WriteFile(filepath.Join(h.groupDir, filepath.FromSlash(rel)), m.Data, 0o640); err != nil {
			return err
		}
		sum := sha256.Sum256(m.Data)
		*result.(*tools.FetchMediaResult) = tools.FetchMediaResult{Ref: a.MediaRef, Kind: m.Kind, Name: m.Name, MIME: m.MIME,
			Size: int64(len(m.Data)), SHA256: hex.EncodeToString(sum[:]), Path: rel, Transcript: m.Transcript}
		return nil
	case tools.ListMedia:
		*result.(*tools.ListMediaResult) = tools.ListMediaResult{}
		return nil
	case tools.FetchURL:
		// Pages by canonical address, under the key media has them:
		// "url:" + the address.
		a := args.(tools.FetchURLArgs)
		u, err := mediaregistry.CanonicalURL(a.URL)
		if err != nil {
			return tools.Errorf(tools.CodeBadRequest, "%v", err)
		}
		m, ok := h.media["url:"+u.String()]
		if !ok {
			return tools.Errorf(tools.CodeDownloadFailed, "%s answered 404 Not Found", u.Host)
		}
		ref := mediaregistry.LinkID(famChat, u.String())
		h.mu.Lock()
		h.fetches[u.String()]++
		h.mu.Unlock()
		rel := "media/" + ref + "_" + m.Name
		if err := os.WriteFile(filepath.Join(h.groupDir, filepath.FromSlash(rel)), m.Data, 0o640); err != nil {
			return err
		}
		*result.(*tools.FetchURLResult) = tools.FetchURLResult{URL: u.String(), ContentType: m.MIME, FetchMediaResult: tools.FetchMediaResult{
			Ref: ref, Kind: m.Kind, Name: m.Name, MIME: m.MIME, Size: int64(len(m.Data)), Path: rel}}
		return nil
	}
	return tools.Errorf(tools.CodeBadRequest, "fake host does not do %s", typ)
}

func (h *fakeHost) fetched(ref string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fetches[ref]
}

type harness struct {
	t         testing.TB
	st        *store.Store
	gs        *groups.Set
	groupsDir string
	tg, sl    *chantest.Channel
	llm       *fakeLLM
	hosts     map[string]*fakeHost // by folder
	media     map[string]fakeMedia
	a         *Agent
	cancel    context.CancelFunc
	seq       int
}

// newHarness builds an agent over a real store in a temp dir, the fake
// channels and an in-process botd MCP server per run. mod adjusts options.
func newHarness(t testing.TB, f *fakeLLM, mod func(*Options)) *harness {
	t.Helper()
	return newHarnessOn(t, store.Config{Driver: "sqlite"}, f, mod)
}

// newHarnessOn is newHarness over the database db names; an SQLite one
// without a DSN is botd.db in the harness's folder, as botd keeps it.
func newHarnessOn(t testing.TB, db store.Config, f *fakeLLM, mod func(*Options)) *harness {
	t.Helper()
	dir := t.TempDir()
	if db.Driver == "sqlite" && db.DSN == "" {
		db.DSN = filepath.Join(dir, "botd.db")
	}
	return newHarnessWith(t, storetest.Open(t, db), dir, f, mod)
}

// newHarnessWith is newHarness over st, with the group folders in dir.
func newHarnessWith(t testing.TB, st *store.Store, dir string, f *fakeLLM, mod func(*Options)) *harness {
	t.Helper()
	var err error
	h := &harness{t: t, st: st, groupsDir: filepath.Join(dir, "groups"), tg: chantest.New("telegram"), sl: chantest.New("slack"),
		llm: f, hosts: map[string]*fakeHost{}, media: map[string]fakeMedia{}}
	h.gs, err = groups.NewSet("Andy", defaultGroups())
	if err != nil {
		t.Fatal(err)
	}
	h.a = New(h.options(mod))
	return h
}

func (h *harness) options(mod func(*Options)) Options {
	o := Options{
		Store: h.st, Groups: h.gs, GroupsDir: h.groupsDir,
		Channels: map[string]channels.Channel{"telegram": h.tg, "slack": h.sl},
		// The harness's scripted models call any tool at once: what the
		// tools do is tested here, how they are offered lazily in
		// lazy_test.go, the bill and end to end.
		LLM: h.llm, Run: RunLimits{Model: "fake-1", EagerTools: true}, AssistantName: "Andy",
		Log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Time:        TimeOptions{Location: time.UTC},
		ToolOptions: ToolOptions{Media: func(group string) tools.Caller { return h.hosts[group] }},
		Intake:      IntakeOptions{RetryDelay: func(try int) time.Duration { return time.Millisecond }},
	}
	if testing.Verbose() {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if mod != nil {
		mod(&o)
	}
	return o
}

// start starts the agent; hosts for every group are created first (they
// are read by concurrent runs).
func (h *harness) start() {
	h.t.Helper()
	for _, g := range h.gs.All() {
		if _, ok := h.hosts[g.Folder]; !ok {
			h.hosts[g.Folder] = &fakeHost{groupDir: filepath.Join(h.groupsDir, g.Folder), media: h.media, fetches: map[string]int{}}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if err := h.a.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		h.a.Wait()
		h.cancel = nil
	}
}

// restart stops the agent and starts a new one over the same store, as a
// daemon restart would.
func (h *harness) restart(mod func(*Options)) {
	h.t.Helper()
	h.stop()
	h.a = New(h.options(mod))
	h.start()
}

type msgOpt func(*channels.Inbound)

func mentioned(in *channels.Inbound) { in.Mentioned = true }
func fromMe(in *channels.Inbound)    { in.FromMe = true }
func isBot(in *channels.Inbound)     { in.IsBot = true }
func thread(id string) msgOpt        { return func(in *channels.Inbound) { in.ThreadID = id } }
func replyTo(id string) msgOpt       { return func(in *channels.Inbound) { in.ReplyTo = id } }

// say delivers a message as a channel would and returns its id.
func (h *harness) say(chat, sender, text string, opts ...msgOpt) string {
	h.t.Helper()
	h.seq++
	in := channels.Inbound{ChatID: chat, ChatName: "chat " + chat, IsGroup: true, ID: fmt.Sprint(100 + h.seq),
		SenderID: "u-" + sender, SenderName: sender, Text: text,
		Time: time.Date(2025, 3, 1, 14, h.seq, 0, 0, time.UTC)}
	for _, o := range opts {
		o(&in)
	}
	if err := h.a.Deliver(context.Background(), in); err != nil {
		h.t.Fatal(err)
	}
	return in.ID
}

// idle waits until no run is in flight and no retry is scheduled.
func (h *harness) idle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chantest.HangGuard)
	defer cancel()
	if err := h.a.queue.waitIdle(ctx); err != nil {
		h.t.Fatalf("agent never went idle: %v", err)
	}
}

func (h *harness) cursor(folder string) int64 {
	h.t.Helper()
	c, err := h.st.AgentCursor(context.Background(), folder)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// lastSeq is the seq of the newest message heard in chat (the agent's own
// recorded answers excluded): the cursor after an answer covering it.
func (h *harness) lastSeq(chat string) int64 {
	h.t.Helper()
	var seq int64
	if err := h.st.DB.QueryRow(`SELECT COALESCE(MAX(seq), 0) FROM messages WHERE chat_id = ? AND from_me = 0`, chat).Scan(&seq); err != nil {
		h.t.Fatal(err)
	}
	return seq
}

func sentTexts(ms []channels.OutMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

// userText is the rendered conversation of a request.
func userText(req llm.Request) string {
	if len(req.Messages) == 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range req.Messages[0].Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func tinyPNG(t testing.TB, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for x := 0; x < 4; x++ {
		for y := 0; y < 4; y++ {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var errScript = errors.New("unexpected call")

// workersAwaitingSlot counts group workers parked in work's select for a
// global run slot, as the goroutine dump shows them: the scheduler's word
// that they are blocked, where a sleep could only hope they had tried.
func workersAwaitingSlot() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if !strings.Contains(lines[0], "[select") {
			continue
		}
		// Frames come as a function line and a file line, innermost
		// first; the runtime's own (selectgo) are usually left out.
		for i := 1; i < len(lines); i += 2 {
			if strings.HasPrefix(lines[i], "runtime.") {
				continue
			}
			if strings.HasPrefix(lines[i], "github.com/botd-dev/botd/agent.(*queue).work(") {
				count++
			}
			break
		}
	}
	return count
}
