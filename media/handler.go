package media

import (
	"context"
	"strings"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/tools"
)

// Handle answers one request of the group whose folder is group: the IPC
// host calls it for files found in data/ipc/<group>/, the in-process
// Caller for the built-in agent. Which method answers which request is
// the tool registry's (tools.Serve). A panic in a handler is an internal
// error for this request, never a dead daemon.
func (s *Service) Handle(ctx context.Context, group string, req *tools.Request) (result any, herr *ipc.Error) {
	defer func() {
		if p := recover(); p != nil {
			s.o.Log.Error("media: handler panicked", "group", group, "type", req.Type, "panic", p)
			result, herr = nil, ipc.Errorf(ipc.CodeInternal, "the host failed handling %s", req.Type)
		}
	}()
	g, ok := s.o.Groups.ByFolder(group)
	if !ok {
		return nil, ipc.Errorf(ipc.CodeForbidden, "%q is not a registered group", group)
	}
	return tools.Serve(ctx, tools.Media, s, g, req)
}

// target picks the chat a send goes to: the group's own chat, or, for the
// main group only, another registered chat.
func (s *Service) target(g *groups.Group, chat string) (string, channels.Channel, *ipc.Error) {
	if chat == "" || g.HasChat(chat) {
		chat = g.Chat
	} else {
		if !g.Main {
			return "", nil, ipc.Errorf(ipc.CodeForbidden, "this group can only send to its own chat")
		}
		if _, ok := s.o.Groups.ByChat(chat); !ok {
			return "", nil, ipc.Errorf(ipc.CodeForbidden, "chat %q is not a registered chat", chat)
		}
	}
	name, _, _ := strings.Cut(chat, ":")
	ch, ok := s.o.Channels[name]
	if !ok {
		return "", nil, ipc.Errorf(ipc.CodeSendFailed, "the %s channel is not running", name)
	}
	return chat, ch, nil
}

// SendMessage is send_message.
func (s *Service) SendMessage(ctx context.Context, g *groups.Group, a ipc.SendMessageArgs) (*ipc.SendResult, *ipc.Error) {
	if strings.TrimSpace(a.Text) == "" {
		return nil, ipc.Errorf(ipc.CodeBadRequest, "text is required")
	}
	chat, ch, herr := s.target(g, a.Chat)
	if herr != nil {
		return nil, herr
	}
	d, err := ch.Send(ctx, channels.OutMessage{Chat: chat, Text: a.Text})
	if err != nil {
		s.o.Log.Warn("send_message failed", "group", g.Folder, "chat", chat, "err", err)
		return nil, ipc.Errorf(ipc.CodeSendFailed, "sending to %s failed: %v", chat, err)
	}
	return &ipc.SendResult{Chat: chat, MessageIDs: d.MessageIDs}, nil
}

// SendMedia is send_media: a file inside the group folder to its chat.
func (s *Service) SendMedia(ctx context.Context, g *groups.Group, a ipc.SendMediaArgs) (*ipc.SendResult, *ipc.Error) {
	d, chat, herr := s.send(ctx, g, a.Path, a.Caption, a.Chat, false)
	if herr != nil {
		return nil, herr
	}
	return &ipc.SendResult{Chat: chat, MessageIDs: d.MessageIDs}, nil
}

// sendFile sends a file of the group folder to the group's own chat; voice
// asks for a voice note where the network has them.
func (s *Service) sendFile(ctx context.Context, g *groups.Group, rel, caption string, voice bool) (channels.Delivery, string, *ipc.Error) {
	return s.send(ctx, g, rel, caption, "", voice)
}

func (s *Service) send(ctx context.Context, g *groups.Group, path, caption, to string, voice bool) (channels.Delivery, string, *ipc.Error) {
	var d channels.Delivery
	f, rel, err := s.workspace(g).Open(path)
	if err != nil {
		return d, "", ipc.Errorf(ipc.CodeBadRequest, "cannot send %s: %v", path, err)
	}
	defer f.Close()
	chat, ch, herr := s.target(g, to)
	if herr != nil {
		return d, "", herr
	}
	ms, ok := ch.(channels.MediaSender)
	if !ok {
		return d, "", ipc.Errorf(ipc.CodeSendFailed, "the %s channel cannot send files", ch.Name())
	}
	mime, err := mediaregistry.FileMIME(f)
	if err != nil {
		return d, "", ipc.Errorf(ipc.CodeBadRequest, "cannot read %s: %v", rel, err)
	}
	d, err = ms.SendMedia(ctx, channels.OutMedia{Chat: chat, File: f, FileName: fileBase(rel), MIME: mime, Caption: caption, Voice: voice})
	if err != nil {
		s.o.Log.Warn("send_media failed", "group", g.Folder, "chat", chat, "err", err)
		return d, "", ipc.Errorf(ipc.CodeSendFailed, "sending %s to %s failed: %v", rel, chat, err)
	}
	return d, chat, nil
}

func fileBase(rel string) string { return rel[strings.LastIndexByte(rel, '/')+1:] }

// Caller answers one group's tool calls in-process (ipc.InProcess): the
// same Handle the IPC host runs. It satisfies mcp.Caller.
func (s *Service) Caller(group string) ipc.InProcess { return ipc.InProcess{Handler: s, Group: group} }
