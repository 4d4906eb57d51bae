package mcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mediaregistry"
	registry "github.com/botd-dev/botd/tools"
)

func (t *tools) ListMedia(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	args := ipc.ListMediaArgs{Limit: registry.DefaultListLimit}
	if v, ok := req.GetArguments()["limit"]; ok && v != nil {
		n, ok := registry.IntArg(v)
		if !ok || n < 1 {
			return registry.BadArgs(registry.ListMedia, "limit must be a positive integer"), nil
		}
		args.Limit = min(n, registry.MaxListLimit)
	}
	kind, has, err := registry.StringArg(req, "kind")
	if err != nil {
		return registry.BadArgs(registry.ListMedia, "%v", err), nil
	}
	if has && kind != "" {
		k, ok := mediaregistry.ParseKind(kind)
		if !ok {
			return registry.BadArgs(registry.ListMedia, "unknown kind %q; one of %s", kind, strings.Join(registry.KindNames(), ", ")), nil
		}
		args.Kind = string(k)
	}
	var res ipc.ListMediaResult
	if err := t.Call(ctx, ipc.TypeListMedia, args, &res); err != nil {
		return registry.ToolError(registry.ListMedia, err), nil
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
			fields = append(fields, registry.OneLine(it.Duration, 16))
		}
		if it.Size > 0 {
			fields = append(fields, mediaregistry.FormatSize(it.Size))
		}
		if it.MIME != "" {
			fields = append(fields, registry.OneLine(it.MIME, 100))
		}
		if it.Sender != "" {
			fields = append(fields, "from "+registry.OneLine(it.Sender, 80))
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

func (t *tools) SendMedia(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var p, caption string
	var err error
	if p, _, err = registry.StringArg(req, "path"); err == nil {
		caption, _, err = registry.StringArg(req, "caption")
	}
	if err != nil {
		return registry.BadArgs(registry.SendMedia, "%v", err), nil
	}
	// Checked here so a typo gets a precise answer without a round trip;
	// the host checks again, it is the one that reads the file.
	f, rel, err := t.ws.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return registry.BadArgs(registry.SendMedia, "no file %s in the group folder", p), nil
		}
		return registry.BadArgs(registry.SendMedia, "cannot send %s: %v", p, err), nil
	}
	f.Close()
	var res ipc.SendResult
	if err := t.Call(ctx, ipc.TypeSendMedia, ipc.SendMediaArgs{Path: rel, Caption: caption}, &res); err != nil {
		return registry.ToolError(registry.SendMedia, err), nil
	}
	return mcpgo.NewToolResultText(registry.DeliveryText("File "+rel, res)), nil
}
