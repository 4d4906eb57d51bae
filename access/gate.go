package access

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
)

// sendTimeout bounds one reply of the gate: it is sent while the channel
// waits to hand over its next message.
const sendTimeout = 15 * time.Second

// Gate answers, without the model, what access decides: an addressed
// message from a chat no group registers gets its pairing code, and an
// owner's /approve or /deny in the main group or a direct message is
// carried out. The agent asks it about every message before routing it
// (agent.Options.Gate).
type Gate struct {
	Store *Store
	// Config is the access section.
	Config Config
	// AssistantName is how botd calls itself in its replies.
	AssistantName string
	// Channel finds the channel a chat id belongs to.
	Channel func(chat string) (channels.Channel, bool)
	// Taken reports whether a folder or a chat already is a group's (the
	// running set, config groups included).
	Taken func(folderOrChat string) bool
	// Approved is called after a chat was approved here, so the daemon
	// takes the group up at once rather than at its next look.
	Approved func()
	Log      *slog.Logger
}

// command is an owner's "/approve CODE" or "/deny CODE", after an
// optional mention ("@Andy /approve …", where a client keeps a leading
// slash to itself) and with an optional "@botname" on the command
// (Telegram's form in groups).
var command = regexp.MustCompile(`(?i)^\s*(?:@\S+\s+)?/(approve|deny)(?:@\S+)?\s+([A-Za-z0-9][A-Za-z0-9 -]{6,10}[A-Za-z0-9])\s*$`)

// Command picks an /approve or /deny command out of text: verb is
// "approve" or "deny", code as typed.
func Command(text string) (verb, code string, ok bool) {
	m := command.FindStringSubmatch(text)
	if m == nil {
		return "", "", false
	}
	return strings.ToLower(m[1]), m[2], true
}

// Intercept reports whether in was dealt with here; then the agent
// neither stores nor routes it. g is the group of the chat, nil for a
// chat no group registers.
func (gt *Gate) Intercept(ctx context.Context, in channels.Inbound, g *groups.Group) bool {
	if in.FromMe || in.IsBot || in.Edit {
		return false
	}
	// Commands count in the main group and in DMs only; elsewhere the
	// text is not even looked at.
	if !in.IsGroup || g != nil && g.Main {
		if verb, code, ok := Command(in.Text); ok {
			gt.command(ctx, in, verb, code)
			return true
		}
	}
	// Mentioned is the network's word: a DM to the bot is, a DM to a
	// shared WhatsApp number is not.
	if g != nil || gt.Config.UnknownChats != Pair || !in.Mentioned {
		return false
	}
	gt.pair(ctx, in)
	return true
}

// owner reports whether the sender of in is one of access.owners.
func (gt *Gate) owner(in channels.Inbound) bool {
	return in.SenderID != "" && gt.Config.IsOwner(groups.UserID(in.ChatID, in.SenderID))
}

func (gt *Gate) command(ctx context.Context, in channels.Inbound, verb, code string) {
	who := strings.SplitN(in.ChatID, ":", 2)[0] + ":" + in.SenderID
	if !gt.owner(in) {
		gt.Log.Info("access: chat command from someone who is not an owner", "chat", in.ChatID, "sender", who, "command", verb)
		gt.reply(ctx, in, "Only an owner of this assistant can do that (access.owners in its config).")
		return
	}
	var text string
	switch verb {
	case "approve":
		k, err := gt.Store.Approve(ctx, code, Approval{By: who, Taken: gt.Taken})
		if err != nil {
			text = "Not approved: " + gt.words(err)
			break
		}
		gt.Log.Info("access: chat approved from a chat", "group", k.Folder, "chat", k.Chat, "by", who)
		if gt.Approved != nil {
			gt.Approved()
		}
		name := k.Name
		if name == "" {
			name = k.Chat
		}
		text = fmt.Sprintf("Approved: %s is now the group %q. I answer there within a few seconds.", name, k.Folder)
	case "deny":
		r, err := gt.Store.Deny(ctx, code)
		if err != nil {
			text = "Not denied: " + gt.words(err)
			break
		}
		gt.Log.Info("access: chat denied from a chat", "chat", r.Chat, "by", who)
		text = fmt.Sprintf("Denied: I stay silent in %s.", orChat(r.ChatName, r.Chat))
	}
	gt.reply(ctx, in, text)
}

// words is an error as the chat may read it: the store's own failures
// are logged, not shown.
func (gt *Gate) words(err error) string {
	if Refused(err) {
		return err.Error()
	}
	gt.Log.Error("access: chat command failed", "err", err)
	return "something went wrong on my side; try `botd chats` on the server."
}

func orChat(name, chat string) string {
	if name != "" {
		return name
	}
	return chat
}

// pair gives the chat of in its code, told at most once an hour.
func (gt *Gate) pair(ctx context.Context, in channels.Inbound) {
	code, tell, err := gt.Store.Ask(ctx, Request{Chat: in.ChatID, ChatName: in.ChatName, IsGroup: in.IsGroup,
		SenderID: in.SenderID, SenderName: in.SenderName})
	if err != nil {
		gt.Log.Error("access: pairing request not kept", "chat", in.ChatID, "err", err)
		return
	}
	if code == "" {
		return // denied: silence
	}
	if !tell {
		gt.Log.Debug("access: chat already told its pairing code", "chat", in.ChatID)
		return
	}
	gt.Log.Info("access: unknown chat addressed the assistant; pairing code sent",
		"chat", in.ChatID, "name", in.ChatName, "code", ShowCode(code))
	gt.reply(ctx, in, gt.pairingText(in, code))
}

// pairingText is the reply a chat gets with its code.
func (gt *Gate) pairingText(in channels.Inbound, code string) string {
	c := ShowCode(code)
	var b strings.Builder
	where := "this chat"
	if !in.IsGroup {
		where = "direct messages"
	}
	fmt.Fprintf(&b, "Hi, I'm %s. I don't answer in %s yet. Pairing code: %s\n", gt.AssistantName, where, c)
	fmt.Fprintf(&b, "The owner of this assistant can approve it on the server with `botd chats approve %s`, or by sending /approve %s in its main chat. The code expires in 24 hours.", c, c)
	if ch, ok := gt.Channel(in.ChatID); ok && in.IsGroup {
		if s, ok := ch.(channels.Sighted); ok {
			if note := s.SightNote(); note != "" {
				b.WriteString("\n\n" + note)
			}
		}
	}
	return b.String()
}

func (gt *Gate) reply(ctx context.Context, in channels.Inbound, text string) {
	ch, ok := gt.Channel(in.ChatID)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if _, err := ch.Send(ctx, channels.OutMessage{Chat: in.ChatID, Text: text, ThreadID: in.ThreadID, ReplyTo: in.ID}); err != nil {
		gt.Log.Warn("access: reply not sent", "chat", in.ChatID, "err", err)
	}
}
