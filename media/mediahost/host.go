// Package mediahost answers the media tools (tools.Media) on the host:
// each tool goes to the service that owns it — fetch and list to media,
// fetch_url and web_search to media/links, generation and video jobs to
// media/generation, sends to media/sending. The IPC host and the built-in
// agent reach them all through one Handle; the services know nothing of
// each other beyond what they call.
package mediahost

import (
	"context"
	"io"
	"log/slog"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/tools"
)

// Media answers fetch_media and list_media (media.Service).
type Media interface {
	Fetch(ctx context.Context, g *groups.Group, ref string) (*tools.FetchMediaResult, *tools.Error)
	List(ctx context.Context, g *groups.Group, a tools.ListMediaArgs) (*tools.ListMediaResult, *tools.Error)
}

// Links answers fetch_url and web_search (links.Service).
type Links interface {
	FetchURL(ctx context.Context, g *groups.Group, a tools.FetchURLArgs) (*tools.FetchURLResult, *tools.Error)
	WebSearch(ctx context.Context, g *groups.Group, a tools.WebSearchArgs) (*tools.WebSearchResult, *tools.Error)
}

// Generation answers the generation tools and video jobs
// (generation.Service).
type Generation interface {
	GenerateImage(ctx context.Context, g *groups.Group, a tools.GenerateImageArgs) (*tools.GeneratedResult, *tools.Error)
	Speak(ctx context.Context, g *groups.Group, a tools.SpeakArgs) (*tools.GeneratedResult, *tools.Error)
	GenerateVideo(ctx context.Context, g *groups.Group, a tools.GenerateVideoArgs) (*tools.VideoJobResult, *tools.Error)
	CancelVideo(ctx context.Context, g *groups.Group, a tools.CancelVideoArgs) (*tools.VideoJobResult, *tools.Error)
	ListVideos(ctx context.Context, g *groups.Group, a tools.ListVideosArgs) (*tools.ListVideosResult, *tools.Error)
}

// Sending answers send_message and send_media (sending.Service).
type Sending interface {
	SendMessage(ctx context.Context, g *groups.Group, a tools.SendMessageArgs) (*tools.SendResult, *tools.Error)
	SendMedia(ctx context.Context, g *groups.Group, a tools.SendMediaArgs) (*tools.SendResult, *tools.Error)
}

// Options wire a Host; a service left nil answers its tools with a clear
// error (a test rig that only fetches).
type Options struct {
	Media      Media
	Links      Links
	Generation Generation
	Sending    Sending
	// Groups are the registered groups a request's folder must name.
	Groups *groups.Set
	Log    *slog.Logger
}

// Host is the media tools' host.
type Host struct{ o Options }

var (
	_ tools.Handler   = (*Host)(nil)
	_ tools.MediaHost = (*Host)(nil)
)

// New returns the host.
func New(o Options) *Host {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Host{o: o}
}

// Handle answers one request of the group whose folder is group: the IPC
// host calls it for files found in data/ipc/<group>/, the in-process
// Caller for the built-in agent. Which method answers which request is
// the tool registry's (tools.Serve). A panic in a handler is an internal
// error for this request, never a dead daemon.
func (h *Host) Handle(ctx context.Context, group string, req *tools.Request) (result any, herr *tools.Error) {
	defer func() {
		if p := recover(); p != nil {
			h.o.Log.Error("media: handler panicked", "group", group, "type", req.Type, "panic", p)
			result, herr = nil, tools.Errorf(tools.CodeInternal, "the host failed handling %s", req.Type)
		}
	}()
	g, ok := h.o.Groups.ByFolder(group)
	if !ok {
		return nil, tools.Errorf(tools.CodeForbidden, "%q is not a registered group", group)
	}
	return tools.Serve(ctx, tools.Media, h, g, req)
}

// Caller answers one group's tool calls in-process (tools.InProcess): the
// same Handle the IPC host runs. It satisfies mcp.Caller.
func (h *Host) Caller(group string) tools.InProcess { return tools.InProcess{Handler: h, Group: group} }

// off answers a tool whose service this host was not given.
func off(tool string) *tools.Error {
	return tools.Errorf(tools.CodeBadRequest, "%s is not served by this host", tool)
}

// Fetch is fetch_media.
func (h *Host) Fetch(ctx context.Context, g *groups.Group, ref string) (*tools.FetchMediaResult, *tools.Error) {
	if h.o.Media == nil {
		return nil, off(tools.FetchMedia)
	}
	return h.o.Media.Fetch(ctx, g, ref)
}

// List is list_media.
func (h *Host) List(ctx context.Context, g *groups.Group, a tools.ListMediaArgs) (*tools.ListMediaResult, *tools.Error) {
	if h.o.Media == nil {
		return nil, off(tools.ListMedia)
	}
	return h.o.Media.List(ctx, g, a)
}

// FetchURL is fetch_url.
func (h *Host) FetchURL(ctx context.Context, g *groups.Group, a tools.FetchURLArgs) (*tools.FetchURLResult, *tools.Error) {
	if h.o.Links == nil {
		return nil, off(tools.FetchURL)
	}
	return h.o.Links.FetchURL(ctx, g, a)
}

// WebSearch is web_search.
func (h *Host) WebSearch(ctx context.Context, g *groups.Group, a tools.WebSearchArgs) (*tools.WebSearchResult, *tools.Error) {
	if h.o.Links == nil {
		return nil, off(tools.WebSearch)
	}
	return h.o.Links.WebSearch(ctx, g, a)
}

// GenerateImage is generate_image.
func (h *Host) GenerateImage(ctx context.Context, g *groups.Group, a tools.GenerateImageArgs) (*tools.GeneratedResult, *tools.Error) {
	if h.o.Generation == nil {
		return nil, off(tools.GenerateImage)
	}
	return h.o.Generation.GenerateImage(ctx, g, a)
}

// Speak is speak.
func (h *Host) Speak(ctx context.Context, g *groups.Group, a tools.SpeakArgs) (*tools.GeneratedResult, *tools.Error) {
	if h.o.Generation == nil {
		return nil, off(tools.Speak)
	}
	return h.o.Generation.Speak(ctx, g, a)
}

// GenerateVideo is generate_video.
func (h *Host) GenerateVideo(ctx context.Context, g *groups.Group, a tools.GenerateVideoArgs) (*tools.VideoJobResult, *tools.Error) {
	if h.o.Generation == nil {
		return nil, off(tools.GenerateVideo)
	}
	return h.o.Generation.GenerateVideo(ctx, g, a)
}

// CancelVideo is cancel_video.
func (h *Host) CancelVideo(ctx context.Context, g *groups.Group, a tools.CancelVideoArgs) (*tools.VideoJobResult, *tools.Error) {
	if h.o.Generation == nil {
		return nil, off(tools.CancelVideo)
	}
	return h.o.Generation.CancelVideo(ctx, g, a)
}

// ListVideos is list_videos.
func (h *Host) ListVideos(ctx context.Context, g *groups.Group, a tools.ListVideosArgs) (*tools.ListVideosResult, *tools.Error) {
	if h.o.Generation == nil {
		return nil, off(tools.ListVideos)
	}
	return h.o.Generation.ListVideos(ctx, g, a)
}

// SendMessage is send_message.
func (h *Host) SendMessage(ctx context.Context, g *groups.Group, a tools.SendMessageArgs) (*tools.SendResult, *tools.Error) {
	if h.o.Sending == nil {
		return nil, off(tools.SendMessage)
	}
	return h.o.Sending.SendMessage(ctx, g, a)
}

// SendMedia is send_media.
func (h *Host) SendMedia(ctx context.Context, g *groups.Group, a tools.SendMediaArgs) (*tools.SendResult, *tools.Error) {
	if h.o.Sending == nil {
		return nil, off(tools.SendMedia)
	}
	return h.o.Sending.SendMedia(ctx, g, a)
}
