package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
)

// MediaHost is what the host's media service answers (media.Service).
type MediaHost interface {
	Fetch(ctx context.Context, g *groups.Group, ref string) (*FetchMediaResult, *Error)
	List(ctx context.Context, g *groups.Group, a ListMediaArgs) (*ListMediaResult, *Error)
	SendMessage(ctx context.Context, g *groups.Group, a SendMessageArgs) (*SendResult, *Error)
	SendMedia(ctx context.Context, g *groups.Group, a SendMediaArgs) (*SendResult, *Error)
	GenerateImage(ctx context.Context, g *groups.Group, a GenerateImageArgs) (*GeneratedResult, *Error)
	Speak(ctx context.Context, g *groups.Group, a SpeakArgs) (*GeneratedResult, *Error)
	GenerateVideo(ctx context.Context, g *groups.Group, a GenerateVideoArgs) (*VideoJobResult, *Error)
	CancelVideo(ctx context.Context, g *groups.Group, a CancelVideoArgs) (*VideoJobResult, *Error)
	ListVideos(ctx context.Context, g *groups.Group, a ListVideosArgs) (*ListVideosResult, *Error)
	FetchURL(ctx context.Context, g *groups.Group, a FetchURLArgs) (*FetchURLResult, *Error)
	WebSearch(ctx context.Context, g *groups.Group, a WebSearchArgs) (*WebSearchResult, *Error)
}

// Tool names of the media tools (each is its IPC request type too).
const (
	ListMedia   = "list_media"
	FetchMedia  = "fetch_media"
	SendMessage = "send_message"
	SendMedia   = "send_media"
)

// Bounds of the media tools' arguments, shared with their MCP handlers.
const (
	DefaultListLimit = 20
	MaxListLimit     = 200
	// MaxSendText bounds send_message; channels split long text, but a
	// runaway model should not flood a chat.
	MaxSendText = 32 << 10
)

// KindNames are the media kinds list_media filters by.
func KindNames() []string {
	out := make([]string, len(mediaregistry.Kinds))
	for i, k := range mediaregistry.Kinds {
		out[i] = string(k)
	}
	return out
}

var listMedia = Spec{
	Name: ListMedia, Service: Media, Repeatable: true, Standby: true, MCP: listMediaMCP,
	Origin: OriginPeople,
	Host:   bind(MediaHost.List),
	Def: fixed(ListMedia,
		withDescription("List the files shared in this chat that can still be fetched, newest first, to find a ref. "+
			"Metadata only (ref, kind, name, size, MIME type, sender, time and caption), nothing is downloaded; "+
			"pass a ref to fetch_media to see the content."),
		annotate(Hints{ReadOnly: true}),
		withInteger("limit",
			description(fmt.Sprintf("Maximum number of items (default %d, at most %d).", DefaultListLimit, MaxListLimit)),
			minimum(1), maximum(MaxListLimit)),
		withString("kind",
			description("Only this kind of media."),
			enum(KindNames()...)),
	),
}

var fetchMedia = Spec{
	Name: FetchMedia, Service: Media, Repeatable: true, Standby: true, MCP: Env.FetchMedia,
	// A member shared the file, but its words (a forwarded PDF, a
	// screenshot, a recording) are whoever made it.
	Origin: OriginStrangers,
	Host: serve(func(s MediaHost, ctx context.Context, g *groups.Group, _ *Request, a FetchMediaArgs) (*FetchMediaResult, *Error) {
		return s.Fetch(ctx, g, a.MediaRef)
	}),
	Def: fixed(FetchMedia,
		withDescription("Read a file shared in the chat by its ref: see an image, hear a voice note, read a document. "+
			"Only when the content matters to the answer (what a photo shows, what a voice note or document says), "+
			"never for files nobody asked about: downloading takes time. Images come back as images (large ones "+
			"downscaled); voice notes and audio as their transcript; videos as a few stills and the transcript of "+
			"their sound; documents (PDF, DOCX, XLSX, ODS, ODT, PPTX, EPUB, HTML, CSV, text) as their text, a part at "+
			"a time: for long ones pass pages as the answer suggests. Every file is also saved in the group folder "+
			"and its path returned, for send_media or other tools. An [in_progress] answer means the download "+
			"continues: call again in a minute."),
		annotate(Hints{ReadOnly: true, Idempotent: true, OpenWorld: true}),
		requiredText("mediaRef", "The media ref, e.g. tg_k3J9x2Qa7P (with or without the \"ref:\" prefix).", 128),
		optionalText("pages", "For documents: which pages (PDF), slides (PPTX) or parts to read, e.g. \"3-5\", \"7\" or \"13-\"; "+
			"omit to start at the beginning.", 32),
	),
}

var sendMessage = Spec{
	Name: SendMessage, Service: Media, MCP: sendMessageMCP,
	Host: bind(MediaHost.SendMessage),
	Def: fixed(SendMessage,
		withDescription("Send a text message to the chat right away, such as a progress note during a long task. "+
			"Do not repeat in your final reply what you sent this way. Long text is split to the channel's limit. "+
			"Returns the delivered message ids or the delivery error. After [send_unknown] or [in_progress] the "+
			"message may have been delivered: do not send it again unless asked."),
		annotate(Hints{OpenWorld: true}),
		requiredText("text", "The message text.", MaxSendText),
	),
}

var sendMedia = Spec{
	Name: SendMedia, Service: Media, MCP: Env.SendMedia,
	Host: bind(MediaHost.SendMedia),
	Def: fixed(SendMedia,
		withDescription("Send a file from the group folder to the chat right away, with an optional caption. "+
			"Do not send it again with a MEDIA: line in your final reply. "+
			"The path is relative to the group folder, e.g. media/tg_k3J9x2Qa7P_photo.jpg or a file you created; "+
			"absolute paths and paths leaving the folder are refused."),
		annotate(Hints{OpenWorld: true}),
		requiredText("path", "File path relative to the group folder, e.g. media/chart.png.", 1024),
		optionalText("caption", "Optional caption shown with the file.", 4096),
	),
}

func sendMessageMCP(e Env, ctx context.Context, in Args) *Result {
	text, err := requiredArg(in, "text", "text is required and must not be empty")
	if err != nil {
		return BadArgs(SendMessage, "%v", err)
	}
	if len(text) > MaxSendText {
		return BadArgs(SendMessage, "text is %d bytes; at most %d", len(text), MaxSendText)
	}
	var res SendResult
	if err := e.Call(ctx, SendMessage, SendMessageArgs{Text: text}, &res); err != nil {
		return ToolError(SendMessage, err)
	}
	return TextResult(DeliveryText("Message", res))
}

// DeliveryText is the answer of a tool that sent to the chat.
func DeliveryText(what string, res SendResult) string {
	s := what + " sent"
	if res.Chat != "" {
		s += " to " + res.Chat
	}
	if len(res.MessageIDs) > 0 {
		s += " (message ids: " + strings.Join(res.MessageIDs, ", ") + ")"
	}
	return s + "."
}

func listMediaMCP(e Env, ctx context.Context, in Args) *Result {
	args := ListMediaArgs{Limit: DefaultListLimit}
	if v, ok := in["limit"]; ok && v != nil {
		n, ok := IntArg(v)
		if !ok || n < 1 {
			return BadArgs(ListMedia, "limit must be a positive integer")
		}
		args.Limit = min(n, MaxListLimit)
	}
	kind, has, err := StringArg(in, "kind")
	if err != nil {
		return BadArgs(ListMedia, "%v", err)
	}
	if has && kind != "" {
		k, ok := mediaregistry.ParseKind(kind)
		if !ok {
			return BadArgs(ListMedia, "unknown kind %q; one of %s", kind, strings.Join(KindNames(), ", "))
		}
		args.Kind = string(k)
	}
	var res ListMediaResult
	if err := e.Call(ctx, ListMedia, args, &res); err != nil {
		return ToolError(ListMedia, err)
	}
	return TextResult(formatList(res.Items, args.Kind, time.Now()))
}

// formatList renders one line per item, in the placeholder's vocabulary so
// the model recognises the fields.
func formatList(items []MediaItem, kind string, now time.Time) string {
	if len(items) == 0 {
		if kind != "" {
			return fmt.Sprintf("No %s media available in this group.", kind)
		}
		return "No media available in this group."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d media item(s), newest first:\n", len(items))
	for _, it := range items {
		fields := []string{"ref:" + it.Ref, it.Kind}
		if it.Name != "" {
			fields = append(fields, mediaregistry.SafeName(it.Name))
		}
		if it.Duration != "" {
			fields = append(fields, OneLine(it.Duration, 16))
		}
		if it.Size > 0 {
			fields = append(fields, mediaregistry.FormatSize(it.Size))
		}
		if it.MIME != "" {
			fields = append(fields, OneLine(it.MIME, 100))
		}
		if it.Sender != "" {
			fields = append(fields, "from "+OneLine(it.Sender, 80))
		}
		if !it.Time.IsZero() {
			fields = append(fields, it.Time.UTC().Format("2006-01-02 15:04 UTC"))
		}
		if !it.Expires.IsZero() {
			if d := it.Expires.Sub(now); d > 0 {
				fields = append(fields, "expires in "+mediaregistry.FormatDuration(d.Round(time.Second)))
			} else {
				fields = append(fields, "expired")
			}
		}
		b.WriteString("- ")
		b.WriteString(strings.Join(fields, ", "))
		if it.Caption != "" {
			b.WriteString(" — caption: ")
			b.WriteString(mediaregistry.SafeCaption(it.Caption))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
