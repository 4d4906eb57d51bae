package discord

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/discord/discordfake"
	"github.com/botd-dev/botd/internal/testwait"
)

func TestSendReplyEscapesMentions(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	q, _ := h.post(t, discordfake.Message{Content: "<@" + discordfake.BotUserID + "> who is on duty?"})
	d, err := h.dc.Send(h.ctx, channels.OutMessage{Chat: chatChannel, ReplyTo: q.ID,
		Text: "**Ann** is, tell @everyone and @here, ping <@42> and <@&77> `code`"})
	if err != nil {
		t.Fatal(err)
	}
	sent := h.fake.SentMessages()
	if len(sent) != 1 || len(d.MessageIDs) != 1 || sent[0].ID != d.MessageIDs[0] {
		t.Fatalf("sent %+v, delivery %+v", sent, d)
	}
	s := sent[0]
	if s.ReplyTo != q.ID || s.Channel != discordfake.Channel {
		t.Errorf("reply_to %q channel %q", s.ReplyTo, s.Channel)
	}
	// Markdown goes as it is: Discord renders it.
	if !strings.HasPrefix(s.Content, "**Ann** is,") || !strings.HasSuffix(s.Content, "`code`") {
		t.Errorf("content = %q", s.Content)
	}
	for _, ping := range []string{"@everyone", "@here", "<@42>", "<@&77>"} {
		if strings.Contains(s.Content, ping) {
			t.Errorf("content still pings %s: %q", ping, s.Content)
		}
	}
	var am struct {
		Parse       []string `json:"parse"`
		RepliedUser bool     `json:"replied_user"`
	}
	if err := json.Unmarshal(s.Mentions, &am); err != nil || am.Parse == nil || len(am.Parse) != 0 || !am.RepliedUser {
		t.Errorf("allowed_mentions = %s (%v), want parse [] and the asker notified", s.Mentions, err)
	}
}

func TestSendSplitsAt2000KeepingCodeBlocks(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	var b strings.Builder
	b.WriteString("Here is the script:\n\n```python\n")
	for i := 0; b.Len() < 4500; i++ {
		b.WriteString("print('line number " + strings.Repeat("x", i%40) + "')\n")
	}
	b.WriteString("```\n\nThat is all.")
	d, err := h.dc.Send(h.ctx, channels.OutMessage{Chat: chatChannel, Text: b.String(), ReplyTo: "123"})
	if err != nil {
		t.Fatal(err)
	}
	sent := h.fake.SentMessages()
	if len(sent) < 3 || len(d.MessageIDs) != len(sent) {
		t.Fatalf("%d messages for %d characters", len(sent), b.Len())
	}
	for i, s := range sent {
		if n := utf8.RuneCountInString(s.Content); n > MaxMessageRunes {
			t.Errorf("piece %d has %d characters", i, n)
		}
		if open, _ := fenceState(s.Content); open {
			t.Errorf("piece %d leaves a code block open:\n%s", i, s.Content)
		}
		if i > 0 && !strings.Contains(s.Content, "That is all") && !strings.HasPrefix(s.Content, "```python\n") {
			t.Errorf("piece %d does not reopen the code block: %.40q", i, s.Content)
		}
		if (i == 0) != (s.ReplyTo == "123") {
			t.Errorf("piece %d reply_to %q; only the first replies", i, s.ReplyTo)
		}
	}
}

func TestSendObeysRateLimit(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	const after = 300 * time.Millisecond
	h.fake.RateLimitOnce("POST /api/v9/channels/"+discordfake.Channel+"/messages", after)
	if _, err := h.dc.Send(h.ctx, outMessage(chatChannel, "after the limit")); err != nil {
		t.Fatal(err)
	}
	var posts []discordfake.Request
	for _, r := range h.fake.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/messages") {
			posts = append(posts, r)
		}
	}
	if len(posts) != 2 || posts[0].Status != 429 || posts[1].Status != 200 {
		t.Fatalf("posts = %+v, want a 429 then the retry", posts)
	}
	if gap := posts[1].At.Sub(posts[0].At); gap < after {
		t.Fatalf("retried after %s, before retry_after %s", gap, after)
	}
	if sent := h.fake.SentMessages(); len(sent) != 1 || sent[0].Content != "after the limit" {
		t.Fatalf("sent = %+v", sent)
	}
}

func TestSendMedia(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	path := filepath.Join(t.TempDir(), "chart.png")
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 2048)...)
	if err := os.WriteFile(path, png, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := h.dc.SendMedia(h.ctx, channels.OutMedia{Chat: chatChannel, File: chantest.OpenFile(t, path), FileName: "chart.png",
		MIME: "image/png", Caption: "the chart, @everyone"})
	if err != nil {
		t.Fatal(err)
	}
	sent := h.fake.SentMessages()
	if len(sent) != 1 || len(d.MessageIDs) != 1 || !sent[0].Multipart || len(sent[0].Files) != 1 {
		t.Fatalf("sent %+v", sent)
	}
	f := sent[0].Files[0]
	if f.Name != "chart.png" || string(f.Body) != string(png) || strings.Contains(sent[0].Content, "@everyone") ||
		!strings.HasPrefix(sent[0].Content, "the chart") {
		t.Fatalf("file %q (%d bytes), content %q", f.Name, len(f.Body), sent[0].Content)
	}

	// A caption longer than a message goes after the file, whole.
	long := strings.Repeat("word ", 600)
	d, err = h.dc.SendMedia(h.ctx, channels.OutMedia{Chat: chatChannel, File: chantest.OpenFile(t, path), Caption: long})
	if err != nil {
		t.Fatal(err)
	}
	sent = h.fake.SentMessages()[1:]
	if len(sent) != 3 || sent[0].Content != "" || len(sent[0].Files) != 1 || len(d.MessageIDs) != 3 {
		t.Fatalf("long caption: %d messages, first content %q", len(sent), sent[0].Content)
	}
}

func TestSendMediaTooLarge(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.fake.SetUploadLimit(1024)
	path := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(path, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := h.dc.SendMedia(h.ctx, channels.OutMedia{Chat: chatChannel, File: chantest.OpenFile(t, path)})
	if !errors.Is(err, channels.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestTypingRenewed(t *testing.T) {
	h := newHarness(t)
	h.dc.typingEvery = 20 * time.Millisecond
	h.start(t)
	if err := h.dc.SetTyping(h.ctx, chatChannel, true); err != nil {
		t.Fatal(err)
	}
	// Renewed until switched off: the loop's third call comes.
	testwait.Until(t, "typing renewed twice", func() bool { return h.fake.Typing(discordfake.Channel) >= 3 })
	if err := h.dc.SetTyping(h.ctx, chatChannel, false); err != nil {
		t.Fatal(err)
	}
	h.dc.mu.Lock()
	n := len(h.dc.typing)
	h.dc.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d typing loops left after off", n)
	}
	if err := h.dc.SetTyping(h.ctx, "telegram:1", true); err == nil {
		t.Fatal("typing in a non-discord chat accepted")
	}
}

func TestBadChatIDs(t *testing.T) {
	h := newHarness(t)
	for _, chat := range []string{"telegram:1", "discord:", "discord:abc", "discord:1/../2"} {
		if _, err := h.dc.Send(h.ctx, outMessage(chat, "x")); err == nil {
			t.Errorf("Send to %q accepted", chat)
		}
	}
}
