package matrix

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
)

func chatMsg(text string) channels.OutMessage {
	return channels.OutMessage{Chat: ChatID(family), Text: text}
}

type sentContent struct {
	MsgType       string `json:"msgtype"`
	Body          string `json:"body"`
	Format        string `json:"format"`
	FormattedBody string `json:"formatted_body"`
	URL           string `json:"url"`
	FileName      string `json:"filename"`
	Voice         *obj   `json:"org.matrix.msc3245.voice"`
	Mentions      *struct {
		UserIDs []string `json:"user_ids"`
		Room    bool     `json:"room"`
	} `json:"m.mentions"`
	RelatesTo *struct {
		RelType   string `json:"rel_type"`
		EventID   string `json:"event_id"`
		InReplyTo *struct {
			EventID string `json:"event_id"`
		} `json:"m.in_reply_to"`
		IsFallingBack bool `json:"is_falling_back"`
	} `json:"m.relates_to"`
}

func decodeSent(t *testing.T, raw json.RawMessage) sentContent {
	t.Helper()
	var c sentContent
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSendReplyAsSanitisedHTML(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	md := "**Yes** — it is a `cat`.\n\n<script>alert(1)</script> <img src=x onerror=alert(1)> @room"
	d, err := h.mx.Send(context.Background(), channels.OutMessage{Chat: ChatID(family), Text: md, ReplyTo: "$question"})
	if err != nil {
		t.Fatal(err)
	}
	sends := h.fake.Sends()
	if len(sends) != 1 || len(d.MessageIDs) != 1 || d.MessageIDs[0] != sends[0].EventID {
		t.Fatalf("sends %+v, delivery %+v", sends, d)
	}
	c := decodeSent(t, sends[0].Content)
	if c.MsgType != "m.text" || c.Format != "org.matrix.custom.html" || c.Body != md {
		t.Errorf("content %+v: want m.text, HTML format and the markdown as body", c)
	}
	for _, w := range []string{"<strong>Yes</strong>", "<code>cat</code>", "&lt;script&gt;", "&lt;img"} {
		if !strings.Contains(c.FormattedBody, w) {
			t.Errorf("formatted_body %q lacks %q", c.FormattedBody, w)
		}
	}
	if strings.Contains(c.FormattedBody, "<script") || strings.Contains(c.FormattedBody, "<img") {
		t.Errorf("raw HTML from the model passed: %q", c.FormattedBody)
	}
	if c.RelatesTo == nil || c.RelatesTo.InReplyTo == nil || c.RelatesTo.InReplyTo.EventID != "$question" {
		t.Errorf("not a reply to $question: %+v", c.RelatesTo)
	}
	if c.Mentions == nil || len(c.Mentions.UserIDs) != 0 || c.Mentions.Room {
		t.Errorf("m.mentions = %+v, want present and empty (no pings from the model)", c.Mentions)
	}
}

func TestSendInThread(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	if _, err := h.mx.Send(context.Background(), channels.OutMessage{Chat: ChatID(family), Text: "ok", ThreadID: "$root"}); err != nil {
		t.Fatal(err)
	}
	c := decodeSent(t, h.fake.Sends()[0].Content)
	if r := c.RelatesTo; r == nil || r.RelType != "m.thread" || r.EventID != "$root" || !r.IsFallingBack {
		t.Errorf("relates_to = %+v, want the thread of $root", c.RelatesTo)
	}
}

func TestSendLongAnswerSplit(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	para := strings.Repeat("word ", 1000)
	d, err := h.mx.Send(context.Background(), chatMsg(para+"\n\n"+para+"\n\n"+para))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.MessageIDs) < 2 {
		t.Fatalf("a %d-character answer went out as %d message(s)", 3*len(para), len(d.MessageIDs))
	}
	for _, s := range h.fake.Sends() {
		if c := decodeSent(t, s.Content); len(c.Body)+len(c.FormattedBody) > maxEventBytes || c.Body == "" {
			t.Errorf("piece of %d+%d bytes", len(c.Body), len(c.FormattedBody))
		}
	}
}

// A send whose answer was lost (a 502 after the homeserver stored the
// event) is retried with the same transaction id: one event in the room.
func TestSendRetryKeepsTheTransactionID(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	h.fake.FailSends(1)
	d, err := h.mx.Send(context.Background(), chatMsg("only once"))
	if err != nil {
		t.Fatal(err)
	}
	sends := h.fake.Sends()
	if len(sends) != 2 || sends[0].Txn != sends[1].Txn || !sends[1].Repeat {
		t.Fatalf("sends = %+v, want one retry with the same txn id", sends)
	}
	mine := 0
	for _, e := range h.fake.Events(family, "m.room.message") {
		if e.Sender == "@botd:fake.local" {
			mine++
		}
	}
	if mine != 1 || d.MessageIDs[0] != sends[0].EventID {
		t.Errorf("%d events from the bot (delivery %v), want exactly one", mine, d.MessageIDs)
	}
	// Different messages get different transaction ids.
	if _, err := h.mx.Send(context.Background(), chatMsg("another")); err != nil {
		t.Fatal(err)
	}
	if s := h.fake.Sends(); s[2].Txn == s[0].Txn {
		t.Error("two messages shared a transaction id")
	}
}

func TestSendMediaVoiceAndFile(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	dir := t.TempDir()
	voice := filepath.Join(dir, "answer.ogg")
	data := append([]byte("OggS"), make([]byte, 2000)...)
	if err := os.WriteFile(voice, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := h.mx.SendMedia(context.Background(), channels.OutMedia{Chat: ChatID(family), File: chantest.OpenFile(t, voice),
		FileName: "answer.ogg", MIME: "audio/ogg", Voice: true, Caption: "**listen**"})
	if err != nil {
		t.Fatal(err)
	}
	c := decodeSent(t, h.fake.Sends()[0].Content)
	if c.MsgType != "m.audio" || c.Voice == nil || c.FileName != "answer.ogg" || !strings.Contains(c.FormattedBody, "<strong>listen</strong>") {
		t.Errorf("voice event %+v", c)
	}
	got, mt, ok := h.fake.Media(c.URL)
	if !ok || string(got) != string(data) || mt != "audio/ogg" || len(d.MessageIDs) != 1 {
		t.Errorf("uploaded %d bytes as %q (%v), want the file", len(got), mt, ok)
	}
}

func TestTyping(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	ctx := context.Background()
	if err := h.mx.SetTyping(ctx, ChatID(family), true); err != nil {
		t.Fatal(err)
	}
	if err := h.mx.SetTyping(ctx, ChatID(family), true); err != nil { // a renewal: no call
		t.Fatal(err)
	}
	if err := h.mx.SetTyping(ctx, ChatID(family), false); err != nil {
		t.Fatal(err)
	}
	calls := h.fake.TypingCalls()
	if len(calls) != 2 || !calls[0].On || calls[0].Timeout != 30000 || calls[1].On || calls[0].Room != family {
		t.Errorf("typing calls = %+v, want on (30s) then off", calls)
	}
	if err := h.mx.SetTyping(ctx, "telegram:1", true); err == nil {
		t.Error("typing in a non-matrix chat was accepted")
	}
}
