package access

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store/storetest"
)

// sighted is a fake channel that says it sees only mentions.
type sighted struct{ *chantest.Channel }

func (sighted) SightNote() string { return "I only see messages that mention me." }

type gateRig struct {
	gate     *Gate
	ch       sighted
	approved int
}

func newGate(t *testing.T, cfg Config) *gateRig {
	t.Helper()
	s, _ := newStore(t, storetest.Config(t, sqldialect.SQLite))
	r := &gateRig{ch: sighted{chantest.New("telegram")}}
	r.gate = &Gate{Store: s, Config: cfg, AssistantName: "Andy",
		Channel:  func(string) (channels.Channel, bool) { return r.ch, true },
		Approved: func() { r.approved++ },
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil))}
	return r
}

var shownCode = regexp.MustCompile(`[A-Z2-9]{4}-[A-Z2-9]{4}`)

func TestGatePairsAddressedStrangers(t *testing.T) {
	ctx := context.Background()
	r := newGate(t, Config{UnknownChats: Pair})
	group := channels.Inbound{ChatID: "telegram:-100", ChatName: "Family", IsGroup: true, ID: "1", SenderID: "7"}
	if r.gate.Intercept(ctx, group, nil) {
		t.Fatal("a message that does not address the assistant was intercepted")
	}
	group.Mentioned = true
	if !r.gate.Intercept(ctx, group, nil) {
		t.Fatal("an addressed message of an unknown chat was not intercepted")
	}
	sent := r.ch.Sent()
	if len(sent) != 1 || sent[0].Chat != "telegram:-100" || sent[0].ReplyTo != "1" {
		t.Fatalf("sent = %+v; want one reply to the message", sent)
	}
	code := shownCode.FindString(sent[0].Text)
	if code == "" || !strings.Contains(sent[0].Text, "botd chats approve "+code) || !strings.Contains(sent[0].Text, "I only see messages that mention me.") {
		t.Fatalf("reply = %q; want the code, how to approve it and the network's note", sent[0].Text)
	}
	group.ID = "2"
	if !r.gate.Intercept(ctx, group, nil) || len(r.ch.Sent()) != 1 {
		t.Fatalf("a second addressed message: sent %d replies, want still 1", len(r.ch.Sent()))
	}
	// A DM the network does not call addressed (a shared number's) is
	// not paired; one it does is, without the network's group note.
	dm := channels.Inbound{ChatID: "telegram:55", SenderID: "55", ID: "3"}
	if r.gate.Intercept(ctx, dm, nil) {
		t.Fatal("a DM not addressed to the assistant was paired")
	}
	dm.Mentioned = true
	if !r.gate.Intercept(ctx, dm, nil) || len(r.ch.Sent()) != 2 || strings.Contains(r.ch.Sent()[1].Text, "mention me") {
		t.Fatalf("a DM: sent = %+v", r.ch.Sent())
	}
	// The assistant's own and other bots' messages never pair.
	for _, in := range []channels.Inbound{{ChatID: "telegram:-9", IsGroup: true, Mentioned: true, IsBot: true}, {ChatID: "telegram:-9", FromMe: true}} {
		if r.gate.Intercept(ctx, in, nil) {
			t.Errorf("intercepted %+v", in)
		}
	}
	// ignore: nothing.
	r2 := newGate(t, Config{UnknownChats: Ignore})
	if r2.gate.Intercept(ctx, group, nil) || len(r2.ch.Sent()) != 0 {
		t.Error("unknown_chats: ignore paired a chat")
	}
}

func TestGateOwnerApproves(t *testing.T) {
	ctx := context.Background()
	r := newGate(t, Config{UnknownChats: Pair, Owners: []string{"telegram:42"}})
	code, _, err := r.gate.Store.Ask(ctx, Request{Chat: "telegram:-100", ChatName: "Family", IsGroup: true})
	if err != nil {
		t.Fatal(err)
	}
	main := &groups.Group{Folder: "main", Chat: "telegram:1", Main: true}
	other := &groups.Group{Folder: "other", Chat: "telegram:-5"}
	cmd := "/approve " + strings.ToLower(ShowCode(code))

	// A command in a group that is not the main group goes on as a message.
	if r.gate.Intercept(ctx, channels.Inbound{ChatID: "telegram:-5", IsGroup: true, SenderID: "42", Text: cmd}, other) {
		t.Fatal("/approve in an ordinary group was intercepted")
	}
	// Not an owner: refused, nothing approved.
	if !r.gate.Intercept(ctx, channels.Inbound{ChatID: "telegram:1", IsGroup: true, SenderID: "43", Text: cmd}, main) {
		t.Fatal("/approve in the main group was not intercepted")
	}
	if s := r.ch.Sent(); len(s) != 1 || !strings.Contains(s[0].Text, "Only an owner") || r.approved != 0 {
		t.Fatalf("a member's /approve: sent %+v, approved %d", s, r.approved)
	}
	// The same id on another network is not the owner either.
	if !r.gate.Intercept(ctx, channels.Inbound{ChatID: "slack:D1", SenderID: "42", Text: cmd}, nil) || r.approved != 0 {
		t.Fatal("slack:42 approved as the owner telegram:42")
	}
	// The owner, in a DM, with Telegram's @botname form.
	if !r.gate.Intercept(ctx, channels.Inbound{ChatID: "telegram:42", SenderID: "42", Text: "/approve@andy_bot " + ShowCode(code)}, nil) {
		t.Fatal("the owner's DM command was not intercepted")
	}
	s := r.ch.Sent()
	if last := s[len(s)-1].Text; !strings.Contains(last, `Approved: Family is now the group "family"`) || r.approved != 1 {
		t.Fatalf("owner's approve: reply %q, approved %d", last, r.approved)
	}
	kept, err := r.gate.Store.Kept(ctx)
	if err != nil || len(kept) != 1 || kept[0].ApprovedBy != "telegram:42" {
		t.Fatalf("kept = %+v, %v", kept, err)
	}
	// Used once.
	r.gate.Intercept(ctx, channels.Inbound{ChatID: "telegram:1", IsGroup: true, SenderID: "42", Text: "@Andy /approve " + ShowCode(code)}, main)
	s = r.ch.Sent()
	if last := s[len(s)-1].Text; !strings.Contains(last, "Not approved: no chat waits with that code") {
		t.Fatalf("a used code: reply %q", last)
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		text, verb, code string
	}{
		{"/approve ABCD-EF23", "approve", "ABCD-EF23"},
		{"  /APPROVE abcdef23 ", "approve", "abcdef23"},
		{"@Andy /deny ABCD-EF23", "deny", "ABCD-EF23"},
		{"/approve@my_bot ABCD-EF23", "approve", "ABCD-EF23"},
		{"/approve", "", ""},
		{"please /approve ABCD-EF23", "", ""},
		{"/approve ABCD-EF23 and more words", "", ""},
		{"/approved ABCD-EF23", "", ""},
	} {
		verb, code, ok := Command(tc.text)
		if verb != tc.verb || code != tc.code || ok != (tc.verb != "") {
			t.Errorf("Command(%q) = %q, %q, %v; want %q, %q", tc.text, verb, code, ok, tc.verb, tc.code)
		}
	}
}

// A stranger writing from many chats at once (concurrently, as several
// channels deliver) makes botd send at most MaxRepliesPerHour replies and
// keep at most MaxPending chats; names far too long are clipped, still
// valid UTF-8.
func TestGateFloodFromManyChats(t *testing.T) {
	ctx := context.Background()
	r := newGate(t, Config{UnknownChats: Pair})
	long := "\u202eevil\nline " + strings.Repeat("é", 5000)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				in := channels.Inbound{ChatID: fmt.Sprintf("telegram:-%d%03d", w+1, i), ChatName: long, SenderName: long,
					IsGroup: true, Mentioned: true, ID: "1"}
				r.gate.Intercept(ctx, in, nil)
			}
		}()
	}
	wg.Wait()
	if n := len(r.ch.Sent()); n != MaxRepliesPerHour {
		t.Errorf("replies to 160 chats = %d, want %d", n, MaxRepliesPerHour)
	}
	p, err := r.gate.Store.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != MaxPending {
		t.Errorf("pending = %d, want %d", len(p), MaxPending)
	}
	for _, q := range p {
		if strings.ContainsAny(q.ChatName+q.SenderName, "\n\u202e") {
			t.Fatalf("kept a name with a line break or a bidi override: %q", q.ChatName)
		}
		if utf8.RuneCountInString(q.ChatName) > maxName+1 || !utf8.ValidString(q.ChatName) || utf8.RuneCountInString(q.SenderName) > maxName+1 {
			t.Fatalf("kept a name of %d runes (valid UTF-8: %v)", utf8.RuneCountInString(q.ChatName), utf8.ValidString(q.ChatName))
		}
	}
}
