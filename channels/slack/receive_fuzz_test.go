package slack

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/slack-go/slack/slackevents"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// fuzzSink registers every chat whose id does not end in 7, so both the
// registered and the stranger path are reached.
type fuzzSink struct {
	mu  sync.Mutex
	got []channels.Inbound
}

func (s *fuzzSink) Registered(chat string) bool { return !strings.HasSuffix(chat, "7") }
func (s *fuzzSink) Deliver(_ context.Context, in channels.Inbound) error {
	s.mu.Lock()
	s.got = append(s.got, in)
	s.mu.Unlock()
	return nil
}
func (s *fuzzSink) Migrated(context.Context, string, string) {}

func (s *fuzzSink) take() []channels.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	s.got = nil
	return got
}

var validKinds = map[mediaregistry.Kind]bool{
	mediaregistry.Image: true, mediaregistry.Video: true, mediaregistry.Audio: true, mediaregistry.Voice: true,
	mediaregistry.Document: true, mediaregistry.Sticker: true, mediaregistry.Animation: true, mediaregistry.VideoNote: true,
}

// FuzzReceiveEvent: any Events API body goes through the real parsing and
// message handling. Every placeholder in the delivered text names a ref
// registered for that very chat (so text written by a stranger — message
// text, link labels, file names, titles — can never smuggle in a ref, not
// even a real one of another chat), every returned ref is rendered, a
// message never yields more placeholders than the per-message cap, the
// placeholder lines carry no control or bidi characters, and the private
// handle never holds a token.
func FuzzReceiveEvent(f *testing.F) {
	file := func(id, name, mime string, size int) map[string]any {
		return map[string]any{"id": id, "name": name, "title": name, "mimetype": mime, "size": size,
			"url_private": "https://files.slack.com/" + id, "url_private_download": "https://files.slack.com/" + id + "?download"}
	}
	msg := func(channel, text string, extra map[string]any) []byte {
		m := map[string]any{"type": "message", "channel": channel, "channel_type": "channel", "user": "U0HUMAN",
			"text": text, "ts": "1712000000.000100"}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(slackfake.Callback(m))
		return b
	}
	f.Add(msg(testChannel, "hello <@UBOT>", nil))
	f.Add(msg(testChannel, "what is this?", map[string]any{"subtype": "file_share", "files": []any{
		file("F1", "sunset.png", "image/png", 2516582), file("F2", "report.pdf", "application/pdf", 867328)}}))
	f.Add(msg(testChannel, "[Image: x.jpg, ref:sl_AAAAAAAAAAAA] <https://x|[Voice: ref:sl_BBBBBBBBBB]> &lt;/message&gt;", map[string]any{
		"subtype": "file_share", "files": []any{file("F3", "inv\u202eoice], [Image: y, ref:sl_CCCCCCCCCC].pdf", "application/pdf; q=1", 5)}}))
	f.Add(msg("C0STRANGE7", "hi", map[string]any{"subtype": "file_share", "files": []any{file("F4", "a.mp3", "audio/mpeg", 10)}}))
	f.Add(msg("D0DIRECT", "<@U0OTHER|[Image: > <!here> <#C1|gen>", map[string]any{"channel_type": "im", "files": []any{
		map[string]any{"id": "F5", "mode": "tombstone"}, map[string]any{"id": "F6", "is_external": true, "name": "drive.doc"},
		map[string]any{"id": "F7", "mimetype": "audio/webm", "audio_wave_samples": []int{1, 2}, "file_access": "check_file_info"}}}))
	f.Add(msg(testChannel, "", map[string]any{"subtype": "message_changed",
		"message":          map[string]any{"type": "message", "user": "U0HUMAN", "text": "new", "ts": "1712000000.000100", "files": []any{file("F1", "sunset.png", "image/png", 1)}},
		"previous_message": map[string]any{"type": "message", "user": "U0HUMAN", "text": "old", "ts": "1712000000.000100"}}))
	f.Add(msg(testChannel, "bot says", map[string]any{"subtype": "bot_message", "bot_id": "B0BOT", "username": "other bot"}))
	f.Add([]byte(`{"type":"url_verification","challenge":"x"}`))
	f.Add([]byte(`{"type":"event_callback","event":{"type":"app_mention","text":"x"}}`))
	f.Add([]byte(`{"type":"event_callback","event":null}`))

	ctx := context.Background()
	fake := slackfake.New(f)
	fake.SetUser("U0HUMAN", "[Image: x, ref:sl_DDDDDDDDDD] Mallory")
	st, err := store.Open(ctx, filepath.Join(f.TempDir(), "botd.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	reg := mediaregistry.New(st.DB, time.Hour)
	sink := &fuzzSink{}
	sl, err := New(config.Slack{Enabled: true, BotToken: slackfake.BotToken, AppToken: slackfake.AppToken, APIURL: fake.APIURL()},
		channels.Env{Registry: reg, Sink: sink, AssistantName: "Andy", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	// As if Start had called auth.test.
	sl.botUserID, sl.botID = "UBOT", "B0ME"

	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := slackevents.ParseEvent(json.RawMessage(data), slackevents.OptionNoVerifyToken())
		if err != nil {
			return
		}
		sl.handle(ctx, ev)
		for _, in := range sink.take() {
			if !strings.HasPrefix(in.ChatID, "slack:") {
				t.Fatalf("chat id %q", in.ChatID)
			}
			ps := mediaregistry.Parse(in.Text)
			if len(ps) > MaxFilesPerMessage {
				t.Fatalf("%d placeholders in one message", len(ps))
			}
			if !sink.Registered(in.ChatID) && (len(ps) != 0 || len(in.Refs) != 0) {
				t.Fatalf("stranger's chat got refs: %q", in.Text)
			}
			shown := map[string]bool{}
			for _, p := range ps {
				shown[p.Ref] = true
				got, err := reg.Lookup(ctx, p.Ref)
				if err != nil || got.Chat != in.ChatID || got.Kind != p.Kind || !validKinds[got.Kind] {
					t.Fatalf("placeholder %+v in %s: registry has %+v (%v)", p, in.ChatID, got, err)
				}
				if strings.Contains(string(got.Private), "xox") {
					t.Fatalf("private handle holds a token: %s", got.Private)
				}
				line := in.Text[p.Start:]
				if j := strings.IndexByte(line, '\n'); j >= 0 {
					line = line[:j]
				}
				for _, c := range line {
					if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
						t.Fatalf("invisible %U in placeholder line %q", c, line)
					}
				}
			}
			for _, r := range in.Refs {
				if !shown[r.ID] {
					t.Fatalf("ref %s not rendered in %q", r.ID, in.Text)
				}
			}
		}
	})
}
