package whatsapp

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
)

func TestSendText(t *testing.T) {
	long := strings.Repeat("word ", 1500) // > textLimit: two pieces
	cases := []struct {
		name   string
		shared bool
		text   string
		want   []string
	}{
		{"dedicated", false, "hello", []string{"hello"}},
		{"shared number", true, "hello", []string{"Andy: hello"}},
		{"split, every piece labelled", true, long, []string{"Andy: ", "Andy: "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestChannel(t, Config{SharedNumber: tc.shared})
			d, err := env.w.Send(context.Background(), channels.OutMessage{Chat: groupID, Text: tc.text})
			if err != nil {
				t.Fatal(err)
			}
			if len(env.cli.sent) != len(tc.want) || len(d.MessageIDs) != len(tc.want) {
				t.Fatalf("sent %d messages (%d ids), want %d", len(env.cli.sent), len(d.MessageIDs), len(tc.want))
			}
			for i, m := range env.cli.sent {
				got := m.GetConversation()
				if !strings.HasPrefix(got, tc.want[i]) || (len(tc.want[i]) > 6 && got != tc.want[i]) {
					t.Errorf("message %d = %q, want %q", i, got, tc.want[i])
				}
				if len([]rune(got)) > textLimit {
					t.Errorf("message %d has %d runes", i, len([]rune(got)))
				}
				if env.cli.sentTo[i] != groupJID {
					t.Errorf("sent to %s", env.cli.sentTo[i])
				}
			}
		})
	}
}

func TestSendRejectsForeignChat(t *testing.T) {
	env := newTestChannel(t, Config{})
	for _, chat := range []string{"telegram:-100123", "whatsapp:", "whatsapp:not a jid@@"} {
		if _, err := env.w.Send(context.Background(), channels.OutMessage{Chat: chat, Text: "x"}); err == nil {
			t.Errorf("%q: sent", chat)
		}
	}
	if len(env.cli.sent) != 0 {
		t.Errorf("sent %d messages", len(env.cli.sent))
	}
}

// TestBotOwnMessages: what counts as the bot's own message, by mode.
func TestBotOwnMessages(t *testing.T) {
	cases := []struct {
		name       string
		shared     bool
		text       string
		fromMe     bool
		echoSent   bool
		wantBot    bool
		wantFromMe bool
	}{
		{"dedicated: everything from the number is the bot", false, "anything", true, false, true, true},
		{"shared: owner typing on the phone", true, "@Andy what time is it", true, false, false, true},
		{"shared: prefixed message is the bot", true, "Andy: it is noon", true, false, true, true},
		{"shared: echo of a message we sent", true, "it is noon", true, true, true, true},
		{"shared: someone else using the prefix", true, "Andy: pretend", false, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestChannel(t, Config{SharedNumber: tc.shared})
			evt := groupMsg("3EB0OWN", &waE2E.Message{Conversation: proto.String(tc.text)})
			if tc.fromMe {
				evt.Info.Sender, evt.Info.IsFromMe = botJID, true
			}
			if tc.echoSent {
				env.w.sent.add("3EB0OWN")
			}
			in, ok, err := env.receive(t, evt)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			if in.IsBot != tc.wantBot || in.FromMe != tc.wantFromMe {
				t.Errorf("IsBot=%v FromMe=%v, want %v %v", in.IsBot, in.FromMe, tc.wantBot, tc.wantFromMe)
			}
			if in.IsBot && in.Mentioned {
				t.Error("a bot message is marked Mentioned")
			}
		})
	}
}

// TestSharedNumberMentions: on a shared number an @mention of the number
// is the owner's, but replying to a labelled bot message addresses the bot.
func TestSharedNumberMentions(t *testing.T) {
	env := newTestChannel(t, Config{SharedNumber: true})
	mention := groupMsg("3EB0M", &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
		Text: proto.String("@4915550000000 dinner?"), ContextInfo: &waE2E.ContextInfo{MentionedJID: []string{botJID.String()}},
	}})
	in, _, _ := env.receive(t, mention)
	if in.Mentioned || in.Text != "@4915550000000 dinner?" {
		t.Errorf("owner mention: Mentioned=%v text=%q", in.Mentioned, in.Text)
	}
	reply := groupMsg("3EB0R", &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
		Text: proto.String("thanks, and tomorrow?"),
		ContextInfo: &waE2E.ContextInfo{StanzaID: proto.String("3EB0B"), Participant: proto.String(botJID.String()),
			QuotedMessage: &waE2E.Message{Conversation: proto.String("Andy: sunny, 24°C")}},
	}})
	if in, _, _ := env.receive(t, reply); !in.Mentioned || in.ReplyTo != "3EB0B" {
		t.Errorf("reply to bot: Mentioned=%v ReplyTo=%q", in.Mentioned, in.ReplyTo)
	}
	dm := groupMsg("3EB0D", &waE2E.Message{Conversation: proto.String("hi")})
	dm.Info.Chat, dm.Info.IsGroup = aliceJID, false
	if in, _, _ := env.receive(t, dm); in.Mentioned {
		t.Error("a DM to the owner's number is not addressed to the bot")
	}
}

func TestSendMedia(t *testing.T) {
	dir := t.TempDir()
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 70_000)...)
	write := func(name string, b []byte) *os.File {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return chantest.OpenFile(t, p)
	}
	cases := []struct {
		name     string
		shared   bool
		media    channels.OutMedia
		wantMsgs int
		check    func(t *testing.T, m *waE2E.Message)
	}{
		{
			name:     "image by sniffing, shared caption",
			shared:   true,
			media:    channels.OutMedia{File: write("chart", png), Caption: "the chart"},
			wantMsgs: 1,
			check: func(t *testing.T, m *waE2E.Message) {
				im := m.GetImageMessage()
				if im == nil || im.GetCaption() != "Andy: the chart" || im.GetMimetype() != "image/png" ||
					im.GetDirectPath() != "/v/t62/up" || im.GetFileLength() != uint64(len(png)) {
					t.Errorf("image message %v", m)
				}
			},
		},
		{
			name:     "document keeps its name",
			media:    channels.OutMedia{File: write("notes.txt", []byte("hello")), FileName: "Meeting notes.txt"},
			wantMsgs: 1,
			check: func(t *testing.T, m *waE2E.Message) {
				d := m.GetDocumentMessage()
				if d == nil || d.GetFileName() != "Meeting notes.txt" || !strings.HasPrefix(d.GetMimetype(), "text/plain") {
					t.Errorf("document message %v", m)
				}
			},
		},
		{
			name:     "voice note is push-to-talk",
			media:    channels.OutMedia{File: write("v.ogg", []byte("OggS....OpusHead")), MIME: "audio/ogg", Voice: true},
			wantMsgs: 1,
			check: func(t *testing.T, m *waE2E.Message) {
				a := m.GetAudioMessage()
				if a == nil || !a.GetPTT() || a.GetMimetype() != "audio/ogg; codecs=opus" {
					t.Errorf("voice message %v", m)
				}
			},
		},
		{
			name:     "audio caption follows as text",
			media:    channels.OutMedia{File: write("a.ogg", []byte("OggS....")), MIME: "audio/ogg", Caption: "listen"},
			wantMsgs: 2,
			check: func(t *testing.T, m *waE2E.Message) {
				if m.GetAudioMessage() == nil {
					t.Errorf("audio message %v", m)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestChannel(t, Config{SharedNumber: tc.shared})
			tc.media.Chat = "whatsapp:" + aliceJID.String()
			d, err := env.w.SendMedia(context.Background(), tc.media)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.MessageIDs) != tc.wantMsgs || len(env.cli.sent) != tc.wantMsgs {
				t.Fatalf("ids=%v sent=%d", d.MessageIDs, len(env.cli.sent))
			}
			want, _ := os.ReadFile(tc.media.File.Name())
			if len(env.cli.uploads) != 1 || !bytes.Equal(env.cli.uploads[0], want) {
				t.Errorf("uploaded bytes differ from the file")
			}
			tc.check(t, env.cli.sent[0])
			if tc.wantMsgs == 2 && env.cli.sent[1].GetConversation() != tc.media.Caption {
				t.Errorf("caption message %v", env.cli.sent[1])
			}
			if env.cli.sentTo[0] != aliceJID {
				t.Errorf("sent to %v", env.cli.sentTo[0])
			}
		})
	}
}

func TestSetTyping(t *testing.T) {
	env := newTestChannel(t, Config{})
	ctx := context.Background()
	if err := env.w.SetTyping(ctx, groupID, true); err != nil {
		t.Fatal(err)
	}
	if err := env.w.SetTyping(ctx, groupID, false); err != nil {
		t.Fatal(err)
	}
	if len(env.cli.presence) != 2 || env.cli.presence[0] != types.ChatPresenceComposing || env.cli.presence[1] != types.ChatPresencePaused {
		t.Errorf("presence %v", env.cli.presence)
	}
}
