package whatsapp

import (
	"context"
	"fmt"
	"io"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"

	"github.com/botd-dev/botd/channels"
)

// fencedClient asks the fence before every call of the channel's client
// (WhatsApp has no HTTP client to wrap: messages, presence, receipts and
// media go through whatsmeow's socket and its own media client, and every
// one the channel makes passes here, handed out by WhatsApp.client).
// A refused call is not made; the error wraps the fence's.
type fencedClient struct {
	c     client
	fence channels.Fence
}

func (f fencedClient) check(ctx context.Context) error {
	if err := f.fence.CheckFence(ctx); err != nil {
		return fmt.Errorf("whatsapp: not sent: %w", err)
	}
	return nil
}

func (f fencedClient) DownloadToFile(ctx context.Context, msg whatsmeow.DownloadableMessage, file whatsmeow.File) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.c.DownloadToFile(ctx, msg, file)
}

func (f fencedClient) SendMediaRetryReceipt(ctx context.Context, message *types.MessageInfo, mediaKey []byte) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.c.SendMediaRetryReceipt(ctx, message, mediaKey)
}

func (f fencedClient) SendMessage(ctx context.Context, to types.JID, message *waE2E.Message, extra ...whatsmeow.SendRequestExtra) (whatsmeow.SendResponse, error) {
	if err := f.check(ctx); err != nil {
		return whatsmeow.SendResponse{}, err
	}
	return f.c.SendMessage(ctx, to, message, extra...)
}

func (f fencedClient) UploadReader(ctx context.Context, plaintext io.Reader, tempFile io.ReadWriteSeeker, appInfo whatsmeow.MediaType) (whatsmeow.UploadResponse, error) {
	if err := f.check(ctx); err != nil {
		return whatsmeow.UploadResponse{}, err
	}
	return f.c.UploadReader(ctx, plaintext, tempFile, appInfo)
}

func (f fencedClient) SendChatPresence(ctx context.Context, jid types.JID, state types.ChatPresence, media types.ChatPresenceMedia) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.c.SendChatPresence(ctx, jid, state, media)
}
