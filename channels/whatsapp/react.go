package whatsapp

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/whatsmeow/proto/waCommon"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Reactor = (*WhatsApp)(nil)

// React implements channels.Reactor with a reaction message: WhatsApp
// keeps one reaction per sender on a message, so emoji replaces old, and
// an empty one takes it off. The message is named by chat, id and, in a
// group, who wrote it.
func (w *WhatsApp) React(ctx context.Context, r channels.Reaction) error {
	cli, err := w.client()
	if err != nil {
		return err
	}
	to, err := parseChat(r.Chat)
	if err != nil {
		return err
	}
	key := &waCommon.MessageKey{RemoteJID: proto.String(to.String()), FromMe: proto.Bool(false), ID: proto.String(r.MessageID)}
	if to.Server == types.GroupServer {
		sender, err := types.ParseJID(r.Sender)
		if err != nil || sender.User == "" {
			return fmt.Errorf("whatsapp reaction in %s: the message's sender %q is not a jid", r.Chat, r.Sender)
		}
		key.Participant = proto.String(sender.String())
	}
	_, err = w.sendMessage(ctx, cli, to, &waE2E.Message{ReactionMessage: &waE2E.ReactionMessage{
		Key: key, Text: proto.String(r.Emoji), SenderTimestampMS: proto.Int64(time.Now().UnixMilli()),
	}})
	return err
}
