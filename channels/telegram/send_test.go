package telegram

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

func sentBy(fake *telegramtest.Server, method string) []telegramtest.Sent {
	var out []telegramtest.Sent
	for _, s := range fake.Sent() {
		if s.Method == method {
			out = append(out, s)
		}
	}
	return out
}

func TestSendSplitsAt4096(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		parts int
	}{
		{"short", "hello", 1},
		{"exactly 4096", strings.Repeat("a", 4096), 1},
		{"4097", strings.Repeat("a", 4097), 2},
		{"4096 runes of multibyte text", strings.Repeat("é", 4096), 1},
		{"paragraphs", strings.Repeat("word ", 800) + "\n\n" + strings.Repeat("more ", 800), 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			d, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: ChatID(groupID), Text: c.text, ReplyTo: "321"})
			if err != nil {
				t.Fatal(err)
			}
			sent := sentBy(h.fake, "sendMessage")
			if len(sent) != c.parts || len(d.MessageIDs) != c.parts {
				t.Fatalf("sent %d messages (%d ids), want %d", len(sent), len(d.MessageIDs), c.parts)
			}
			var joined []rune
			for i, s := range sent {
				if s.ChatID != groupID {
					t.Errorf("part %d to chat %d", i, s.ChatID)
				}
				if n := len([]rune(s.Text)); n > 4096 {
					t.Errorf("part %d has %d characters", i, n)
				}
				if wantReply := map[bool]int{true: 321, false: 0}[i == 0]; s.ReplyTo != wantReply {
					t.Errorf("part %d reply_to=%d, want %d", i, s.ReplyTo, wantReply)
				}
				joined = append(joined, []rune(strings.ReplaceAll(strings.ReplaceAll(s.Text, " ", ""), "\n", ""))...)
			}
			if want := strings.ReplaceAll(strings.ReplaceAll(c.text, " ", ""), "\n", ""); string(joined) != want {
				t.Error("text lost or changed in splitting")
			}
		})
	}
}

func TestSendReplyToRightChatAndThread(t *testing.T) {
	h := newHarness(t)
	// A DM reply as the router would send it after an inbound message.
	handle(h, telegramtest.Text(telegramtest.Private(telegramtest.Person(dmUserID, "Dee")), telegramtest.Person(dmUserID, "Dee"), 77, "hi"))
	in := h.sink.Inbounds()[0]
	if _, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: in.ChatID, Text: "hello Dee", ReplyTo: in.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: ChatID(groupID), Text: "in topic", ThreadID: "55"}); err != nil {
		t.Fatal(err)
	}
	sent := sentBy(h.fake, "sendMessage")
	if len(sent) != 2 || sent[0].ChatID != dmUserID || sent[0].ReplyTo != 77 || sent[0].Text != "hello Dee" {
		t.Errorf("reply: %v", sent)
	}
	if sent[1].ChatID != groupID || sent[1].ThreadID != 55 {
		t.Errorf("topic send: %v", sent[1])
	}
	for _, bad := range []string{"slack:C1", "telegram:abc", ""} {
		if _, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: bad, Text: "x"}); err == nil {
			t.Errorf("chat %q accepted", bad)
		}
	}
}

func TestSendRetries429(t *testing.T) {
	h := newHarness(t)
	h.fake.FailNext("sendMessage", telegramtest.Failure{Status: 429, Description: "Too Many Requests: retry after 3", RetryAfter: 3})
	start := time.Now()
	d, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: ChatID(groupID), Text: "after the flood"})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 3*time.Millisecond {
		t.Error("retry_after was not waited out")
	}
	if n := h.fake.Calls("sendMessage"); n != 2 {
		t.Errorf("sendMessage calls = %d, want 2", n)
	}
	if len(d.MessageIDs) != 1 || len(sentBy(h.fake, "sendMessage")) != 1 {
		t.Errorf("delivery %v, sent %v", d, h.fake.Sent())
	}
}

func TestSendDoesNotRetry5xx(t *testing.T) {
	h := newHarness(t)
	h.fake.FailNext("sendMessage", telegramtest.Failure{Status: 502, Raw: "bad gateway"})
	_, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: ChatID(groupID), Text: "maybe sent"})
	if err == nil {
		t.Fatal("no error")
	}
	// The message may have gone out; sending again could duplicate it.
	if n := h.fake.Calls("sendMessage"); n != 1 {
		t.Errorf("sendMessage calls = %d, want 1", n)
	}
}

func TestSendFollowsSupergroupMigration(t *testing.T) {
	h := newHarness(t)
	h.fake.FailNext("sendMessage", telegramtest.Failure{Status: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateTo: groupID})
	if _, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: "telegram:-4242", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if m := h.sink.Migrations(); len(m) != 1 || m[0] != [2]string{"telegram:-4242", ChatID(groupID)} {
		t.Errorf("migrations %v", m)
	}
	if sent := sentBy(h.fake, "sendMessage"); len(sent) != 1 || sent[0].ChatID != groupID {
		t.Errorf("sent %v", sent)
	}
}

func TestSendMediaByMIME(t *testing.T) {
	cases := []struct {
		file, mime string
		size       int
		method     string
		voice      bool
	}{
		{"clip.mp4", "video/mp4", 3000, "sendVideo", false},
		{"reply.mp3", "audio/mpeg", 3000, "sendVoice", true}, // asked for as a voice note
		{"chart.png", "image/png", 2000, "sendPhoto", false},
		{"photo.jpg", "", 2000, "sendPhoto", false},   // no MIME given: decided by mediaregistry.FileMIME
		{"fake.jpg", "", 2000, "sendDocument", false}, // a name never makes unknown bytes a photo
		{"huge.jpg", "image/jpeg", 11 << 20, "sendDocument", false},
		{"report.pdf", "application/pdf", 5000, "sendDocument", false},
		{"note.ogg", "audio/ogg", 3000, "sendVoice", false},
		{"song.mp3", "audio/mpeg", 4000, "sendAudio", false},
		{"anim.gif", "image/gif", 1000, "sendDocument", false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			h := newHarness(t)
			path := filepath.Join(t.TempDir(), c.file)
			data := bytes.Repeat([]byte{0xAB}, c.size)
			if c.file == "photo.jpg" {
				copy(data, []byte{0xFF, 0xD8, 0xFF, 0xE0}) // a JPEG's first bytes
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := h.tg.SendMedia(context.Background(), channels.OutMedia{Chat: ChatID(groupID), File: chantest.OpenFile(t, path), FileName: c.file, MIME: c.mime, Caption: "here", Voice: c.voice})
			if err != nil {
				t.Fatal(err)
			}
			sent := h.fake.Sent()
			if len(sent) != 1 || len(d.MessageIDs) != 1 {
				t.Fatalf("sent %v", sent)
			}
			s := sent[0]
			if s.Method != c.method || s.ChatID != groupID || s.FileName != c.file || s.Caption != "here" || !bytes.Equal(s.Data, data) {
				t.Errorf("got %v, want %s of %s", s, c.method, c.file)
			}
		})
	}
}

func TestSendMediaLongCaptionAndRetry(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(t.TempDir(), "a.pdf")
	if err := os.WriteFile(path, []byte("%PDF-1.4 tiny"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.fake.FailNext("sendDocument", telegramtest.Failure{Status: 429, RetryAfter: 1})
	caption := strings.Repeat("c", 1500)
	d, err := h.tg.SendMedia(context.Background(), channels.OutMedia{Chat: ChatID(groupID), File: chantest.OpenFile(t, path), FileName: "a.pdf", Caption: caption})
	if err != nil {
		t.Fatal(err)
	}
	sent := h.fake.Sent()
	if len(sent) != 2 || len(d.MessageIDs) != 2 {
		t.Fatalf("sent %v", sent)
	}
	// The retried upload must carry the whole file again.
	if sent[0].Method != "sendDocument" || string(sent[0].Data) != "%PDF-1.4 tiny" || sent[0].Caption != "" {
		t.Errorf("document: %v", sent[0])
	}
	if sent[1].Method != "sendMessage" || sent[1].Text != caption {
		t.Errorf("caption message: %v", sent[1])
	}
	if _, err := h.tg.SendMedia(context.Background(), channels.OutMedia{Chat: ChatID(groupID), File: chantest.OpenFile(t, t.TempDir()), FileName: "dir"}); err == nil {
		t.Error("a folder was accepted as a file")
	}
}

func TestSetTyping(t *testing.T) {
	h := newHarness(t)
	h.tg.typingEvery = 5 * time.Millisecond
	ctx := context.Background()
	if err := h.tg.SetTyping(ctx, ChatID(groupID), true); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "len(sentBy(h.fake, \"sendChatAction\")) >= 3", func() bool { return len(sentBy(h.fake, "sendChatAction")) >= 3 })
	// Catch the loop inside a refresh, its answer held: no other refresh
	// is in flight, so what the fake recorded by "off" is all a stopped
	// loop may have sent, where a sleep for an in-flight refresh to land
	// could be too short on a loaded machine.
	arrived, release := h.fake.HoldChatActions()
	defer release()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no typing refresh within 10s")
	}
	if err := h.tg.SetTyping(ctx, ChatID(groupID), false); err != nil {
		t.Fatal(err)
	}
	n := len(sentBy(h.fake, "sendChatAction"))
	release()
	// A refresh after "off" would carry the cancelled loop context and
	// never leave the client, so a correct loop cannot fail this; the
	// window only gives a loop that was not stopped (refreshing every
	// 5ms) the chance to show itself.
	time.Sleep(20 * h.tg.typingEvery)
	actions := sentBy(h.fake, "sendChatAction")
	if len(actions) != n {
		t.Errorf("typing kept refreshing after off: %d → %d", n, len(actions))
	}
	for _, a := range actions {
		if a.ChatID != groupID || a.Action != string(models.ChatActionTyping) {
			t.Errorf("action %v", a)
		}
	}
}

func TestStartRejectsBadToken(t *testing.T) {
	for _, status := range []int{401, 404} {
		h := newHarness(t)
		h.fake.FailNext("getMe", telegramtest.Failure{Status: status})
		err := h.tg.Start(context.Background())
		if err == nil {
			t.Fatal("Start succeeded with a rejected token")
		}
		msg := err.Error()
		for _, want := range []string{"channels.telegram.token", "TELEGRAM_BOT_TOKEN"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%d: error %q does not name %s", status, msg, want)
			}
		}
		if strings.Contains(msg, telegramtest.Token) {
			t.Errorf("token in error: %q", msg)
		}
		if n := h.fake.Calls("getUpdates"); n != 0 {
			t.Errorf("polled %d times after a failed start", n)
		}
		<-h.tg.Done()
	}
}

func TestNewValidates(t *testing.T) {
	h := newHarness(t)
	env := h.tg.env
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "channels.telegram.token"},
		{Config{Token: "x", Webhook: &Webhook{Listen: ":0", URL: "https://x/y"}}, "webhook.secret"},
		{Config{Token: "x", Webhook: &Webhook{Secret: "s"}}, "url and listen"},
	} {
		if _, err := New(c.cfg, env); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want error naming %s", c.cfg, err, c.want)
		}
	}
	before := h.fake.Calls("getMe")
	if _, err := New(Config{Token: telegramtest.Token, APIURL: h.fake.URL()}, env); err != nil || h.fake.Calls("getMe") != before {
		t.Errorf("New touched the network or failed: %v", err)
	}
}

func TestPollingStartRemovesWebhookAndReceives(t *testing.T) {
	h := newHarness(t)
	h.fake.Enqueue(telegramtest.Text(group, alice, 1, "first"))
	h.start(t)
	h.waitInbound(t, 1)
	if h.fake.Calls("deleteWebhook") != 1 || h.fake.Calls("getMe") != 1 {
		t.Errorf("deleteWebhook=%d getMe=%d", h.fake.Calls("deleteWebhook"), h.fake.Calls("getMe"))
	}
	if me := h.tg.Me(); me.Username != telegramtest.BotUsername {
		t.Errorf("me = %+v", me)
	}
	// Later updates keep flowing through the same long poll loop.
	h.fake.Enqueue(telegramtest.Text(group, alice, 2, "second"))
	got := h.waitInbound(t, 2)
	if got[1].Text != "second" {
		t.Errorf("got %+v", got[1])
	}
	testwait.Until(t, "h.fake.Pending() == 0", func() bool { return h.fake.Pending() == 0 }) // offsets confirm updates
}

func TestWebhook(t *testing.T) {
	const secret = "s3cret-Token_1"
	h := newHarness(t, func(c *Config) {
		c.Webhook = &Webhook{Listen: "127.0.0.1:0", URL: "https://bot.example.invalid/tg/hook", Secret: secret}
	})
	h.start(t)
	url, sec, maxConn := h.fake.Webhook()
	if url != "https://bot.example.invalid/tg/hook" || sec != secret || maxConn != 1 {
		t.Errorf("setWebhook got url=%q secret=%q max_connections=%d", url, sec, maxConn)
	}
	if n := h.fake.Calls("getUpdates"); n != 0 {
		t.Errorf("polled %d times in webhook mode", n)
	}
	hook := "http://" + h.tg.WebhookAddr() + "/tg/hook"
	ctx := context.Background()

	for _, bad := range []string{"wrong", "", secret + "x"} {
		status, err := telegramtest.PostUpdate(ctx, hook, bad, telegramtest.Text(group, alice, 1, "injected"))
		if err != nil {
			t.Fatal(err)
		}
		if status != 401 {
			t.Errorf("secret %q: status %d, want 401", bad, status)
		}
	}
	if n := len(h.sink.Inbounds()); n != 0 {
		t.Fatalf("%d injected messages delivered", n)
	}

	status, err := telegramtest.PostUpdate(ctx, hook, secret, telegramtest.Text(group, alice, 2, "real"))
	if err != nil || status != 200 {
		t.Fatalf("status %d err %v", status, err)
	}
	if got := h.sink.Inbounds(); len(got) != 1 || got[0].Text != "real" {
		t.Errorf("delivered %+v", got)
	}
	if !strings.Contains(h.logs.String(), "wrong secret") {
		t.Error("refused requests were not logged")
	}
}

func TestRetryGivesUpOnLongRetryAfter(t *testing.T) {
	h := newHarness(t)
	h.tg.maxRetryWait = 10 * time.Millisecond
	h.fake.FailNext("sendMessage", telegramtest.Failure{Status: 429, RetryAfter: 3600})
	_, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: ChatID(groupID), Text: "x"})
	if err == nil || !strings.Contains(err.Error(), "too long to wait") {
		t.Errorf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.tg.maxRetryWait = time.Hour
	h.fake.FailNext("sendMessage", telegramtest.Failure{Status: 429, RetryAfter: 3600})
	if _, err := h.tg.Send(ctx, channels.OutMessage{Chat: ChatID(groupID), Text: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled send: %v", err)
	}
}
