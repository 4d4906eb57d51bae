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
	registry "github.com/botd-dev/botd/tools"
)

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

// requiredArg reads a string argument that must not be blank; missing is
// the error's sentence when it is.
func requiredArg(req mcpgo.CallToolRequest, key, missing string) (string, error) {
	s, _, err := stringArg(req, key)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(s) == "" {
		return "", errors.New(missing)
	}
	return s, nil
}

// into names an optional string argument and where it goes.
type into struct {
	key string
	dst *string
}

// readStrings reads optional string arguments in order; the first of
// another type is the error.
func readStrings(req mcpgo.CallToolRequest, args ...into) error {
	for _, a := range args {
		s, _, err := stringArg(req, a.key)
		if err != nil {
			return err
		}
		*a.dst = s
	}
	return nil
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
	args := ipc.ListMediaArgs{Limit: registry.DefaultListLimit}
	if v, ok := req.GetArguments()["limit"]; ok && v != nil {
		n, ok := intArg(v)
		if !ok || n < 1 {
			return badArgs(registry.ListMedia, "limit must be a positive integer"), nil
		}
		args.Limit = min(n, registry.MaxListLimit)
	}
	kind, has, err := stringArg(req, "kind")
	if err != nil {
		return badArgs(registry.ListMedia, "%v", err), nil
	}
	if has && kind != "" {
		k, ok := mediaregistry.ParseKind(kind)
		if !ok {
			return badArgs(registry.ListMedia, "unknown kind %q; one of %s", kind, strings.Join(registry.KindNames(), ", ")), nil
		}
		args.Kind = string(k)
	}
	var res ipc.ListMediaResult
	if err := t.call(ctx, ipc.TypeListMedia, args, &res); err != nil {
		return toolError(registry.ListMedia, err), nil
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
	text, err := requiredArg(req, "text", "text is required and must not be empty")
	if err != nil {
		return badArgs(registry.SendMessage, "%v", err), nil
	}
	if len(text) > registry.MaxSendText {
		return badArgs(registry.SendMessage, "text is %d bytes; at most %d", len(text), registry.MaxSendText), nil
	}
	var res ipc.SendResult
	if err := t.call(ctx, ipc.TypeSendMessage, ipc.SendMessageArgs{Text: text}, &res); err != nil {
		return toolError(registry.SendMessage, err), nil
	}
	return mcpgo.NewToolResultText(deliveryText("Message", res)), nil
}

func (t *tools) sendMedia(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var p, caption string
	if err := readStrings(req, into{"path", &p}, into{"caption", &caption}); err != nil {
		return badArgs(registry.SendMedia, "%v", err), nil
	}
	// Checked here so a typo gets a precise answer without a round trip;
	// the host checks again, it is the one that reads the file.
	f, rel, err := t.ws.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return badArgs(registry.SendMedia, "no file %s in the group folder", p), nil
		}
		return badArgs(registry.SendMedia, "cannot send %s: %v", p, err), nil
	}
	f.Close()
	var res ipc.SendResult
	if err := t.call(ctx, ipc.TypeSendMedia, ipc.SendMediaArgs{Path: rel, Caption: caption}, &res); err != nil {
		return toolError(registry.SendMedia, err), nil
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
