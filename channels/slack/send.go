package slack

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/botd-dev/botd/channels"
)

// Send posts text to a chat as mrkdwn, formatted and split at TextLimit by
// render, into msg.ThreadID's thread when set.
func (s *Slack) Send(ctx context.Context, msg channels.OutMessage) (channels.Delivery, error) {
	return s.postPieces(ctx, msg.Chat, msg.ThreadID, render(msg.Text, TextLimit))
}

// postPieces posts text render already formatted (and escaped), one
// message a piece. mrkdwn is left at Slack's default, on.
func (s *Slack) postPieces(ctx context.Context, chat, thread string, pieces []string) (channels.Delivery, error) {
	channel, err := nativeID(chat)
	if err != nil {
		return channels.Delivery{}, err
	}
	var d channels.Delivery
	for i, piece := range pieces {
		opts := []slackapi.MsgOption{slackapi.MsgOptionText(piece, false)}
		if thread != "" {
			opts = append(opts, slackapi.MsgOptionTS(thread))
		}
		_, ts, err := s.api.PostMessageContext(ctx, channel, opts...)
		if err != nil {
			return d, fmt.Errorf("slack: chat.postMessage to %s (part %d): %w", chat, i+1, err)
		}
		d.MessageIDs = append(d.MessageIDs, ts)
	}
	return d, nil
}

// SendMedia uploads a file with Slack's external upload flow
// (files.getUploadURLExternal, upload, files.completeUploadExternal) and
// shares it to the chat (and thread). The caption becomes the file's
// comment; a caption over TextLimit goes on as follow-up messages.
// Delivery.MessageIDs holds the Slack file id: the completion call does not
// return the message ts.
func (s *Slack) SendMedia(ctx context.Context, m channels.OutMedia) (channels.Delivery, error) {
	channel, err := nativeID(m.Chat)
	if err != nil {
		return channels.Delivery{}, err
	}
	st, err := m.File.Stat()
	if err != nil {
		return channels.Delivery{}, fmt.Errorf("slack: send media: %w", err)
	}
	if st.Size() == 0 {
		return channels.Delivery{}, fmt.Errorf("slack: send media %s: Slack does not accept empty files", m.FileName)
	}
	name := m.FileName
	if name == "" {
		name = filepath.Base(m.File.Name())
	}
	caption := render(m.Caption, TextLimit)
	params := slackapi.UploadFileParameters{
		Reader:          io.NewSectionReader(m.File, 0, st.Size()),
		FileSize:        int(st.Size()),
		Filename:        name,
		Title:           name,
		Channel:         channel,
		ThreadTimestamp: m.ThreadID,
	}
	if len(caption) > 0 {
		params.InitialComment = caption[0]
	}
	sum, err := s.api.UploadFileContext(ctx, params)
	if err != nil {
		return channels.Delivery{}, fmt.Errorf("slack: upload %s to %s: %w", name, m.Chat, err)
	}
	d := channels.Delivery{MessageIDs: []string{sum.ID}}
	if len(caption) > 1 {
		rest, err := s.postPieces(ctx, m.Chat, m.ThreadID, caption[1:])
		d.MessageIDs = append(d.MessageIDs, rest.MessageIDs...)
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

func nativeID(chat string) (string, error) {
	id, ok := strings.CutPrefix(chat, "slack:")
	if !ok || id == "" {
		return "", fmt.Errorf("slack: %q is not a slack chat id", chat)
	}
	return id, nil
}
