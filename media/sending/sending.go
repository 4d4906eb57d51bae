// Package sending is the one home of what botd sends to a chat on a
// tool's behalf: send_message, send_media, and the files the generation
// service delivers. It picks the chat (the group's own, or for the main
// group another registered chat), opens the file inside the group folder
// and hands it to the network's channel.
package sending

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
)

// Options wire a Service.
type Options struct {
	// Channels by name ("telegram", ...); send_media needs
	// channels.MediaSender.
	Channels  map[string]channels.Channel
	Groups    *groups.Set
	GroupsDir string
	Log       *slog.Logger
}

// Service answers send_message and send_media of every group.
type Service struct{ o Options }

// New returns the service; it does no I/O.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{o: o}
}

// target picks the chat a send goes to: the group's own chat, or, for the
// main group only, another registered chat.
func (s *Service) target(g *groups.Group, chat string) (string, channels.Channel, *tools.Error) {
	if chat == "" || g.HasChat(chat) {
		chat = g.Chat
	} else {
		if !g.Main {
			return "", nil, tools.Errorf(tools.CodeForbidden, "this group can only send to its own chat")
		}
		if _, ok := s.o.Groups.ByChat(chat); !ok {
			return "", nil, tools.Errorf(tools.CodeForbidden, "chat %q is not a registered chat", chat)
		}
	}
	name, _, _ := strings.Cut(chat, ":")
	ch, ok := s.o.Channels[name]
	if !ok {
		return "", nil, tools.Errorf(tools.CodeSendFailed, "the %s channel is not running", name)
	}
	return chat, ch, nil
}

// SendMessage is send_message.
func (s *Service) SendMessage(ctx context.Context, g *groups.Group, a tools.SendMessageArgs) (*tools.SendResult, *tools.Error) {
	if strings.TrimSpace(a.Text) == "" {
		return nil, tools.Errorf(tools.CodeBadRequest, "text is required")
	}
	chat, ch, herr := s.target(g, a.Chat)
	if herr != nil {
		return nil, herr
	}
	d, err := ch.Send(ctx, channels.OutMessage{Chat: chat, Text: a.Text})
	if err != nil {
		s.o.Log.Warn("send_message failed", "group", g.Folder, "chat", chat, "err", err)
		return nil, tools.Errorf(tools.CodeSendFailed, "sending to %s failed: %v", chat, err)
	}
	return &tools.SendResult{Chat: chat, MessageIDs: d.MessageIDs}, nil
}

// SendMedia is send_media: a file inside the group folder to its chat.
func (s *Service) SendMedia(ctx context.Context, g *groups.Group, a tools.SendMediaArgs) (*tools.SendResult, *tools.Error) {
	d, chat, herr := s.send(ctx, g, a.Path, a.Caption, a.Chat, false)
	if herr != nil {
		return nil, herr
	}
	return &tools.SendResult{Chat: chat, MessageIDs: d.MessageIDs}, nil
}

// SendFile sends a file of the group folder to the group's own chat; voice
// asks for a voice note where the network has them. It returns the chat
// it went to.
func (s *Service) SendFile(ctx context.Context, g *groups.Group, rel, caption string, voice bool) (channels.Delivery, string, *tools.Error) {
	return s.send(ctx, g, rel, caption, "", voice)
}

func (s *Service) send(ctx context.Context, g *groups.Group, path, caption, to string, voice bool) (channels.Delivery, string, *tools.Error) {
	var d channels.Delivery
	ws := groups.Workspace{Root: filepath.Join(s.o.GroupsDir, g.Folder)}
	f, rel, err := ws.Open(path)
	if err != nil {
		return d, "", tools.Errorf(tools.CodeBadRequest, "cannot send %s: %v", path, err)
	}
	defer f.Close()
	chat, ch, herr := s.target(g, to)
	if herr != nil {
		return d, "", herr
	}
	ms, ok := ch.(channels.MediaSender)
	if !ok {
		return d, "", tools.Errorf(tools.CodeSendFailed, "the %s channel cannot send files", ch.Name())
	}
	mime, err := mediaregistry.FileMIME(f)
	if err != nil {
		return d, "", tools.Errorf(tools.CodeBadRequest, "cannot read %s: %v", rel, err)
	}
	d, err = ms.SendMedia(ctx, channels.OutMedia{Chat: chat, File: f, FileName: fileBase(rel), MIME: mime, Caption: caption, Voice: voice})
	if err != nil {
		s.o.Log.Warn("send_media failed", "group", g.Folder, "chat", chat, "err", err)
		return d, "", tools.Errorf(tools.CodeSendFailed, "sending %s to %s failed: %v", rel, chat, err)
	}
	return d, chat, nil
}

// Tell sends text to the group's own chat without a tool call behind it
// (a video job's end): a failure is the caller's to log.
func (s *Service) Tell(ctx context.Context, g *groups.Group, text string) error {
	chat, ch, herr := s.target(g, "")
	if herr != nil {
		return herr
	}
	_, err := ch.Send(ctx, channels.OutMessage{Chat: chat, Text: text})
	return err
}

func fileBase(rel string) string { return rel[strings.LastIndexByte(rel, '/')+1:] }
