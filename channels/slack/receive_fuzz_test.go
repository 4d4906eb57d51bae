package slack

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack/slackevents"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

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
	// Every chat whose id does not end in 7 is registered, so both the
	// registered and the stranger path are reached.
	sink := chantest.NewSink()
	sink.RegisterFunc(func(chat string) bool { return !strings.HasSuffix(chat, "7") })
	sl, err := New(Config{Enabled: true, BotToken: slackfake.BotToken, AppToken: slackfake.AppToken, APIURL: fake.APIURL()},
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
		for _, in := range sink.Take() {
			chantest.CheckInbound(t, reg, in, sink.Registered(in.ChatID))
			if len(in.Refs) > MaxFilesPerMessage {
				t.Fatalf("%d refs in one message", len(in.Refs))
			}
			for _, r := range in.Refs {
				if !validKinds[r.Kind] {
					t.Fatalf("ref of kind %q", r.Kind)
				}
				got, err := reg.Get(ctx, mediaregistry.Chats{in.ChatID}, r.ID)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(got.Private), "xox") {
					t.Fatalf("private handle holds a token: %s", got.Private)
				}
			}
		}
	})
}
