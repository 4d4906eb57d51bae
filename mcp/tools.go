package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/internal/textclip"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mediaregistry"
)

// Tool names, fixed by the design.
const (
	ToolListMedia   = "list_media"
	ToolFetchMedia  = "fetch_media"
	ToolSendMessage = "send_message"
	ToolSendMedia   = "send_media"
	ToolRemember    = "remember"
	ToolForget      = "forget"
)

const (
	defaultListLimit = 20
	maxListLimit     = 200
	// maxSendText bounds send_message; channels split long text, but a
	// runaway model should not flood a chat.
	maxSendText = 32 << 10
)

func kindNames() []string {
	out := make([]string, len(mediaregistry.Kinds))
	for i, k := range mediaregistry.Kinds {
		out[i] = string(k)
	}
	return out
}

func listMediaTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolListMedia,
		mcpgo.WithDescription("List the media (images, voice notes, audio, video, documents, stickers) shared in this "+
			"group's chat that can still be fetched, newest first: ref, kind, name, size, MIME type, sender, time "+
			"and caption. Metadata only, nothing is downloaded. Pass a ref to fetch_media to see the content."),
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
		mcpgo.WithInteger("limit",
			mcpgo.Description(fmt.Sprintf("Maximum number of items (default %d, at most %d).", defaultListLimit, maxListLimit)),
			mcpgo.Min(1), mcpgo.Max(maxListLimit)),
		mcpgo.WithString("kind",
			mcpgo.Description("Only this kind of media."),
			mcpgo.Enum(kindNames()...)),
	)
}

func fetchMediaTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolFetchMedia,
		mcpgo.WithDescription("Fetch the content of a media attachment by its ref (the ref:... field of a placeholder "+
			"such as [Image: photo.jpg, 2.4MB, image/jpeg, ref:tg_k3J9x2Qa7P]). Downloads it on first use. Images "+
			"come back as image content (large ones as a downscaled preview); voice notes and audio as their "+
			"transcript; videos as a few stills and the transcript of their sound; documents (PDF, DOCX, XLSX, ODS, "+
			"ODT, PPTX, EPUB, HTML, CSV, text) as their text, a part at a time: for long ones pass pages, e.g. "+
			"\"3-5\", as the answer suggests. Every file is also saved in the group folder and its path returned, so "+
			"it can be opened with other tools or sent with send_media. An [in_progress] answer means the download "+
			"continues: call again in a minute."),
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithIdempotentHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(true),
		mcpgo.WithString("mediaRef",
			mcpgo.Required(),
			mcpgo.Description("The media ref, e.g. tg_k3J9x2Qa7P (with or without the \"ref:\" prefix)."),
			mcpgo.MinLength(1), mcpgo.MaxLength(128)),
		mcpgo.WithString("pages",
			mcpgo.Description("For documents: which pages (PDF), slides (PPTX) or parts to read, e.g. \"3-5\", \"7\" or \"13-\"; "+
				"omit to start at the beginning."),
			mcpgo.MaxLength(32)),
	)
}

func sendMessageTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolSendMessage,
		mcpgo.WithDescription("Send a text message to this group's chat right away (for example a progress note "+
			"during a long task). Long text is split to the channel's limit. Returns the delivered message ids or "+
			"the delivery error. After [send_unknown] or [in_progress] the message may have been delivered: do not "+
			"send it again unless asked."),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(true),
		mcpgo.WithString("text",
			mcpgo.Required(),
			mcpgo.Description("The message text."),
			mcpgo.MinLength(1), mcpgo.MaxLength(maxSendText)),
	)
}

func sendMediaTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolSendMedia,
		mcpgo.WithDescription("Send a file from the group folder to this group's chat, with an optional caption. "+
			"The path is relative to the group folder, e.g. media/tg_k3J9x2Qa7P_photo.jpg or a file you created; "+
			"absolute paths and paths leaving the folder are refused."),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(true),
		mcpgo.WithString("path",
			mcpgo.Required(),
			mcpgo.Description("File path relative to the group folder, e.g. media/chart.png."),
			mcpgo.MinLength(1), mcpgo.MaxLength(1024)),
		mcpgo.WithString("caption",
			mcpgo.Description("Optional caption shown with the file."),
			mcpgo.MaxLength(4096)),
	)
}

// stringArg reads an optional string argument; a value of another type is
// an error rather than silently ignored.
func stringArg(req mcpgo.CallToolRequest, key string) (string, bool, error) {
	v, ok := req.GetArguments()[key]
	if !ok || v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, fmt.Errorf("%s must be a string", key)
	}
	return s, true, nil
}

// intArg accepts an integer however the transport decoded it (JSON gives
// float64; in-process callers may pass int).
func intArg(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<31 {
			return 0, false
		}
		return int(n), true
	case int:
		return n, true
	case int64:
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

func (t *tools) listMedia(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	args := ipc.ListMediaArgs{Limit: defaultListLimit}
	if v, ok := req.GetArguments()["limit"]; ok && v != nil {
		n, ok := intArg(v)
		if !ok || n < 1 {
			return badArgs(ToolListMedia, "limit must be a positive integer"), nil
		}
		args.Limit = min(n, maxListLimit)
	}
	kind, has, err := stringArg(req, "kind")
	if err != nil {
		return badArgs(ToolListMedia, "%v", err), nil
	}
	if has && kind != "" {
		k, ok := mediaregistry.ParseKind(kind)
		if !ok {
			return badArgs(ToolListMedia, "unknown kind %q; one of %s", kind, strings.Join(kindNames(), ", ")), nil
		}
		args.Kind = string(k)
	}
	var res ipc.ListMediaResult
	if err := t.call(ctx, ipc.TypeListMedia, args, &res); err != nil {
		return toolError(ToolListMedia, err), nil
	}
	return mcpgo.NewToolResultText(formatList(res.Items, args.Kind, time.Now())), nil
}

// formatList renders one line per item, in the placeholder's vocabulary so
// the model recognises the fields.
func formatList(items []ipc.MediaItem, kind string, now time.Time) string {
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
			fields = append(fields, oneLine(it.Duration, 16))
		}
		if it.Size > 0 {
			fields = append(fields, mediaregistry.FormatSize(it.Size))
		}
		if it.MIME != "" {
			fields = append(fields, oneLine(it.MIME, 100))
		}
		if it.Sender != "" {
			fields = append(fields, "from "+oneLine(it.Sender, 80))
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

// oneLine keeps a stranger-influenced field on its line and short, and
// defuses anything in it that looks like one of botd's placeholders.
func oneLine(s string, max int) string {
	return textclip.Clip(mediaregistry.Neutralize(textclip.OneLine(s, 0)), max)
}

func (t *tools) sendMessage(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	text, _, err := stringArg(req, "text")
	if err != nil {
		return badArgs(ToolSendMessage, "%v", err), nil
	}
	if strings.TrimSpace(text) == "" {
		return badArgs(ToolSendMessage, "text is required and must not be empty"), nil
	}
	if len(text) > maxSendText {
		return badArgs(ToolSendMessage, "text is %d bytes; at most %d", len(text), maxSendText), nil
	}
	var res ipc.SendResult
	if err := t.call(ctx, ipc.TypeSendMessage, ipc.SendMessageArgs{Text: text}, &res); err != nil {
		return toolError(ToolSendMessage, err), nil
	}
	return mcpgo.NewToolResultText(deliveryText("Message", res)), nil
}

func (t *tools) sendMedia(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	p, _, err := stringArg(req, "path")
	if err != nil {
		return badArgs(ToolSendMedia, "%v", err), nil
	}
	caption, _, err := stringArg(req, "caption")
	if err != nil {
		return badArgs(ToolSendMedia, "%v", err), nil
	}
	// Checked here so a typo gets a precise answer without a round trip;
	// the host checks again, it is the one that reads the file.
	f, rel, err := t.ws.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return badArgs(ToolSendMedia, "no file %s in the group folder", p), nil
		}
		return badArgs(ToolSendMedia, "cannot send %s: %v", p, err), nil
	}
	f.Close()
	var res ipc.SendResult
	if err := t.call(ctx, ipc.TypeSendMedia, ipc.SendMediaArgs{Path: rel, Caption: caption}, &res); err != nil {
		return toolError(ToolSendMedia, err), nil
	}
	return mcpgo.NewToolResultText(deliveryText("File "+rel, res)), nil
}

func deliveryText(what string, res ipc.SendResult) string {
	s := what + " sent"
	if res.Chat != "" {
		s += " to " + res.Chat
	}
	if len(res.MessageIDs) > 0 {
		s += " (message ids: " + strings.Join(res.MessageIDs, ", ") + ")"
	}
	return s + "."
}
