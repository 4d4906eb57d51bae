package modelview

import (
	"context"
	"errors"
	"io/fs"

	registry "github.com/botd-dev/botd/tools"
)

// SendMedia is send_media's MCP half (registry.Env).
func (t *Session) SendMedia(ctx context.Context, in registry.Args) *registry.Result {
	var p, caption string
	var err error
	if p, _, err = registry.StringArg(in, "path"); err == nil {
		caption, _, err = registry.StringArg(in, "caption")
	}
	if err != nil {
		return registry.BadArgs(registry.SendMedia, "%v", err)
	}
	// Checked here so a typo gets a precise answer without a round trip;
	// the host checks again, it is the one that reads the file.
	f, rel, err := t.ws.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return registry.BadArgs(registry.SendMedia, "no file %s in the group folder", p)
		}
		return registry.BadArgs(registry.SendMedia, "cannot send %s: %v", p, err)
	}
	f.Close()
	var res registry.SendResult
	if err := t.Call(ctx, registry.SendMedia, registry.SendMediaArgs{Path: rel, Caption: caption}, &res); err != nil {
		return registry.ToolError(registry.SendMedia, err)
	}
	return registry.TextResult(registry.DeliveryText("File "+rel, res))
}
