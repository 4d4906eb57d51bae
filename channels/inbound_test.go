package channels_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

const (
	ours    = "telegram:-100"
	strange = "telegram:-999"
)

func photo(chat, caption string) mediaregistry.MediaReference {
	return mediaregistry.MediaReference{Chat: chat, MessageID: "7", Kind: mediaregistry.Image, MIME: "image/jpeg",
		Size: 2516582, Caption: caption, Private: []byte("file-id")}
}

func doc(chat string) mediaregistry.MediaReference {
	return mediaregistry.MediaReference{Chat: chat, MessageID: "7", Kind: mediaregistry.Document,
		MIME: "application/pdf", FileName: "report.pdf", Size: 867328, Private: []byte("file-id-2")}
}

type rig struct {
	st   *store.Store
	reg  *mediaregistry.Registry
	sink *chantest.Sink
	logs *bytes.Buffer
	env  channels.Env
}

func newRig(t *testing.T) *rig {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{st: st, reg: mediaregistry.New(st.DB, time.Hour), sink: chantest.NewSink(ours), logs: &bytes.Buffer{}}
	r.env = channels.Env{Registry: r.reg, Sink: r.sink, Log: slog.New(slog.NewTextHandler(r.logs, nil))}
	return r
}

func (r *rig) rows(t *testing.T) int {
	t.Helper()
	var n int
	if err := r.st.DB.QueryRow(`SELECT count(*) FROM media_refs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCompose(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		chat  string
		text  string
		refs  func(t *testing.T, r *rig) []mediaregistry.MediaReference
		setup func(t *testing.T, r *rig)
		// want is Text with every ref id replaced by REF.
		want       string
		registered bool
		refIDs     int // refs delivered
		rows       int // refs in the registry afterwards
		logged     string
		// stopped: receiving stopped (ctx ended) before the store took
		// the refs; otherwise a refused registration would be retried.
		stopped bool
	}{
		{
			name: "unregistered chat: ids only, nothing registered",
			chat: strange, text: "secret plans",
			refs: func(*testing.T, *rig) []mediaregistry.MediaReference {
				return []mediaregistry.MediaReference{photo(strange, "x")}
			},
			want:       "",
			registered: false,
		},
		{
			name: "text only",
			chat: ours, text: "hello",
			want: "hello", registered: true,
		},
		{
			name: "placeholders first, then the text",
			chat: ours, text: "what are these?",
			refs: func(*testing.T, *rig) []mediaregistry.MediaReference {
				return []mediaregistry.MediaReference{photo(ours, "sunset"), doc(ours)}
			},
			want:       "[Image: 2.4MB, image/jpeg, ref:REF] sunset\n[Document: report.pdf, 847KB, application/pdf, ref:REF]\nwhat are these?",
			registered: true, refIDs: 2, rows: 2,
		},
		{
			name: "media without text",
			chat: ours,
			refs: func(*testing.T, *rig) []mediaregistry.MediaReference {
				return []mediaregistry.MediaReference{doc(ours)}
			},
			want: "[Document: report.pdf, 847KB, application/pdf, ref:REF]", registered: true, refIDs: 1, rows: 1,
		},
		{
			name: "a ref registered for an earlier event is only rendered",
			chat: ours, text: "edited",
			refs: func(t *testing.T, r *rig) []mediaregistry.MediaReference {
				old := photo(ours, "")
				if err := r.reg.Register(ctx, &old); err != nil {
					t.Fatal(err)
				}
				return []mediaregistry.MediaReference{old, doc(ours)}
			},
			want:       "[Image: 2.4MB, image/jpeg, ref:REF]\n[Document: report.pdf, 847KB, application/pdf, ref:REF]\nedited",
			registered: true, refIDs: 2, rows: 2,
		},
		{
			name:    "a refused registration when receiving stops keeps the message with metadata only",
			stopped: true,
			chat:    ours, text: "look",
			refs: func(*testing.T, *rig) []mediaregistry.MediaReference {
				return []mediaregistry.MediaReference{photo(ours, "my caption"), doc(ours)}
			},
			setup: func(t *testing.T, r *rig) {
				// A broken store: every insert fails.
				if _, err := r.st.DB.Exec(`DROP TABLE media_refs`); err != nil {
					t.Fatal(err)
				}
			},
			want:       "[Image: 2.4MB, image/jpeg] my caption\n[Document: report.pdf, 847KB, application/pdf]\nlook",
			registered: true, rows: -1 /* no table to count */, logged: "registering media refs failed",
		},
		{
			name: "no registry: metadata only",
			chat: ours, text: "look",
			refs: func(*testing.T, *rig) []mediaregistry.MediaReference {
				return []mediaregistry.MediaReference{doc(ours)}
			},
			setup: func(t *testing.T, r *rig) { r.env.Registry = nil },
			want:  "[Document: report.pdf, 847KB, application/pdf]\nlook", registered: true, logged: "no media registry",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			var refs []mediaregistry.MediaReference
			if c.refs != nil {
				refs = c.refs(t, r)
			}
			if c.setup != nil {
				c.setup(t, r)
			}
			before := append([]mediaregistry.MediaReference(nil), refs...)
			in := channels.Inbound{ChatID: c.chat, ID: "7", Text: "stale", Refs: []mediaregistry.MediaReference{{ID: "stale"}}}
			cctx := ctx
			if c.stopped {
				var cancel context.CancelFunc
				cctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			got := r.env.Compose(cctx, &in, c.text, refs)
			if got != c.registered {
				t.Errorf("Compose reported registered=%v, want %v", got, c.registered)
			}
			text := in.Text
			for _, ref := range in.Refs {
				text = strings.ReplaceAll(text, ref.ID, "REF")
			}
			if text != c.want {
				t.Errorf("text = %q, want %q", text, c.want)
			}
			if len(in.Refs) != c.refIDs {
				t.Errorf("refs = %d, want %d", len(in.Refs), c.refIDs)
			}
			if c.rows >= 0 {
				if n := r.rows(t); n != c.rows {
					t.Errorf("registry rows = %d, want %d", n, c.rows)
				}
			}
			if r.env.Registry != nil {
				chantest.CheckInbound(t, r.reg, in, c.registered)
			}
			for i := range refs {
				if refs[i].ID != before[i].ID {
					t.Errorf("Compose changed the caller's ref %d id from %q to %q", i, before[i].ID, refs[i].ID)
				}
			}
			if c.logged != "" && !strings.Contains(r.logs.String(), c.logged) {
				t.Errorf("log lacks %q:\n%s", c.logged, r.logs)
			}
			if c.logged == "" && r.logs.Len() != 0 {
				t.Errorf("unexpected log:\n%s", r.logs)
			}
		})
	}
}

// A registration the store refused (here its media_refs table is gone,
// SQLite's own "no such table") is tried again with backoff until the store
// takes it: the photo keeps its ref instead of becoming metadata only.
func TestComposeRetriesARefusedRegistration(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	clk := clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	r.env.Inbox = channels.NewInbox(r.env.Log, clk, backoff.Schedule{Initial: time.Second, Max: time.Minute})
	var ddl []string
	rows, err := r.st.DB.Query(`SELECT sql FROM sqlite_master WHERE tbl_name = 'media_refs' AND sql IS NOT NULL ORDER BY type DESC`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		ddl = append(ddl, q)
	}
	rows.Close()
	if _, err := r.st.DB.Exec(`DROP TABLE media_refs`); err != nil {
		t.Fatal(err)
	}
	done := make(chan channels.Inbound)
	go func() {
		in := channels.Inbound{ChatID: ours, ID: "7"}
		r.env.Compose(ctx, &in, "look", []mediaregistry.MediaReference{photo(ours, "my caption")})
		done <- in
	}()
	// Each refusal leaves a retry timer on the fake clock.
	for i := 0; i < 2; i++ {
		testwait.Until(t, "a retry waiting", func() bool { return len(clk.Waiting()) == 1 })
		if st := r.env.Inbox.Status(); st.FailingSince.IsZero() || st.Held["telegram"] != 1 {
			t.Fatalf("status while refused = %+v", st)
		}
		if i == 1 {
			for _, q := range ddl { // the store works again
				if _, err := r.st.DB.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
		}
		clk.Advance(time.Minute)
	}
	in := <-done
	if len(in.Refs) != 1 || !strings.HasPrefix(in.Text, "[Image:") || r.rows(t) != 1 {
		t.Fatalf("after the store came back: text %q, %d refs, %d rows; want the photo's ref", in.Text, len(in.Refs), r.rows(t))
	}
	chantest.CheckInbound(t, r.reg, in, true)
	if st := r.env.Inbox.Status(); !st.FailingSince.IsZero() || st.Waiting() != 0 {
		t.Errorf("status after recovery = %+v", st)
	}
}

func TestRenderMeta(t *testing.T) {
	cases := []struct {
		name string
		ref  mediaregistry.MediaReference
		want string
	}{
		{"kind only", mediaregistry.MediaReference{Kind: mediaregistry.Sticker}, "[Sticker]"},
		{"every field and a caption", mediaregistry.MediaReference{Kind: mediaregistry.Voice, FileName: "memo.ogg",
			Duration: 12 * time.Second, Size: 23552, MIME: "audio/ogg", Caption: "listen"}, "[Voice: memo.ogg, 12s, 23KB, audio/ogg] listen"},
		{"an id is never rendered", mediaregistry.MediaReference{ID: "tg_AAAAAAAAAAAA", Kind: mediaregistry.Image, MIME: "image/png"}, "[Image: image/png]"},
		{"caption that looks like an empty ref, no fields", mediaregistry.MediaReference{Kind: mediaregistry.Image, Caption: "a, ref:] b: ref:]"},
			"[Image] a, ref:] b: ref:]"},
		{"name that mentions ref", mediaregistry.MediaReference{Kind: mediaregistry.Document, FileName: "ref:] x", MIME: "text/plain"},
			"[Document: ref_) x, text/plain]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := channels.RenderMeta(&c.ref)
			if got != c.want {
				t.Errorf("RenderMeta = %q, want %q", got, c.want)
			}
			if ps := mediaregistry.Parse(got); len(ps) != 0 {
				t.Errorf("%q parses as a placeholder with a ref: %+v", got, ps)
			}
		})
	}
}

// Of a stranger's message only whether it addresses the assistant and a
// short chat command reach the sink.
func TestComposeStranger(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		in        channels.Inbound
		text      string
		wantText  string
		mentioned bool
	}{
		{"group chatter", channels.Inbound{IsGroup: true}, "hello all, see you at 5", "", false},
		{"group trigger", channels.Inbound{IsGroup: true}, "  @andy what is this", "", true},
		{"network mention kept", channels.Inbound{IsGroup: true, Mentioned: true}, "hey bot", "", true},
		{"a DM the network says is to the bot", channels.Inbound{Mentioned: true}, "hi there", "", true},
		{"a DM it does not (a shared number)", channels.Inbound{}, "hi there", "", false},
		{"a command", channels.Inbound{Mentioned: true}, "/approve ABCD-EF23", "/approve ABCD-EF23", true},
		{"a command after a mention", channels.Inbound{IsGroup: true}, "@Andy /approve ABCD-EF23", "@Andy /approve ABCD-EF23", true},
		{"a long command", channels.Inbound{}, "/approve " + strings.Repeat("x", 80), "", false},
		{"two lines", channels.Inbound{}, "/approve ABCD-EF23\nand my secrets", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := channels.Env{Sink: chantest.NewSink(), AssistantName: "Andy"}
			in := c.in
			in.ChatID, in.ID = "telegram:-5", "1"
			if env.Compose(ctx, &in, c.text, nil) {
				t.Fatal("a stranger's chat reported registered")
			}
			if in.Text != c.wantText || in.Mentioned != c.mentioned {
				t.Errorf("text %q mentioned %v; want %q, %v", in.Text, in.Mentioned, c.wantText, c.mentioned)
			}
		})
	}
}
