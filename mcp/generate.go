package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/ipc"
	registry "github.com/botd-dev/botd/tools"
)

// Media generation: the tools turn into IPC requests that the host's
// media service answers (it holds the provider keys, the cache and the
// channels); the registry offers each only when its model is configured.

// GenerateTools says which generation models are configured
// (media.generation.image, .speech, .video).
type GenerateTools = registry.Generate

// boolArg reads an optional boolean, def when absent.
func boolArg(req mcpgo.CallToolRequest, key string, def bool) (bool, error) {
	v, ok := req.GetArguments()[key]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s must be true or false", key)
	}
	return b, nil
}

// generationError answers a failed generation: a refusal or a spent
// budget is a plain sentence the model passes on, not an error dump.
func generationError(tool string, err error) *mcpgo.CallToolResult {
	var ie *ipc.Error
	if errors.As(err, &ie) && (ie.Code == ipc.CodeRefused || ie.Code == ipc.CodeOverBudget) {
		return mcpgo.NewToolResultError(ie.Message + " Tell the chat so in one sentence; do not try again with the same request.")
	}
	return toolError(tool, err)
}

func (t *tools) generateImage(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var a ipc.GenerateImageArgs
	var err error
	if a.Prompt, err = requiredArg(req, "prompt", "prompt is required: describe the image"); err == nil {
		err = readStrings(req, into{"size", &a.Size}, into{"source_ref", &a.SourceRef}, into{"caption", &a.Caption})
	}
	if err == nil {
		a.Send, err = boolArg(req, "send", true)
	}
	if err != nil {
		return badArgs(registry.GenerateImage, "%v", err), nil
	}
	a.SourceRef = strings.TrimPrefix(strings.TrimSpace(a.SourceRef), "ref:")
	var res ipc.GeneratedResult
	if err := t.callFor(ctx, t.genTimeout, ipc.TypeGenerateImage, a, &res); err != nil {
		return generationError(registry.GenerateImage, err), nil
	}
	return mcpgo.NewToolResultText(generatedText("Image", res)), nil
}

func (t *tools) speak(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var a ipc.SpeakArgs
	var err error
	if a.Text, err = requiredArg(req, "text", "text is required: the words to speak"); err == nil {
		err = readStrings(req, into{"voice", &a.Voice})
	}
	if err == nil {
		a.Send, err = boolArg(req, "send", true)
	}
	if err != nil {
		return badArgs(registry.Speak, "%v", err), nil
	}
	var res ipc.GeneratedResult
	if err := t.callFor(ctx, t.genTimeout, ipc.TypeSpeak, a, &res); err != nil {
		return generationError(registry.Speak, err), nil
	}
	return mcpgo.NewToolResultText(generatedText("Voice note", res)), nil
}

// generatedText tells the model what was made and where it went; the
// provider's note came from a model that read a chat's prompt, so it is
// kept on one line.
func generatedText(what string, res ipc.GeneratedResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s made by %s and saved as %s: %s", what, res.Model, res.Path, res.Placeholder)
	if res.Cost != "" {
		fmt.Fprintf(&b, " Cost: %s.", res.Cost)
	}
	if len(res.MessageIDs) > 0 {
		fmt.Fprintf(&b, " Sent to the chat (message ids: %s); do not send it again.", strings.Join(res.MessageIDs, ", "))
	} else {
		fmt.Fprintf(&b, " Not sent yet: put MEDIA:./%s on a line of your answer to send it.", res.Path)
	}
	if res.Note != "" {
		fmt.Fprintf(&b, " The model's note: %s", oneLine(res.Note, 500))
	}
	return b.String()
}

func (t *tools) generateVideo(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var a ipc.GenerateVideoArgs
	var err error
	if a.Prompt, err = requiredArg(req, "prompt", "prompt is required: describe the video"); err != nil {
		return badArgs(registry.GenerateVideo, "%v", err), nil
	}
	if v, ok := req.GetArguments()["seconds"]; ok && v != nil {
		n, ok := intArg(v)
		if s, isStr := v.(string); isStr {
			_, err := fmt.Sscan(s, &n)
			ok = err == nil
		}
		if !ok || (n != 4 && n != 8 && n != 12) {
			return badArgs(registry.GenerateVideo, "seconds must be 4, 8 or 12"), nil
		}
		a.Seconds = n
	}
	if a.Size, _, err = stringArg(req, "size"); err != nil {
		return badArgs(registry.GenerateVideo, "%v", err), nil
	}
	var res ipc.VideoJobResult
	if err := t.call(ctx, ipc.TypeGenerateVideo, a, &res); err != nil {
		return generationError(registry.GenerateVideo, err), nil
	}
	return mcpgo.NewToolResultText(fmt.Sprintf("Video job %d started with %s (%s, %ds); it must be ready by %s. %s",
		res.ID, res.Model, res.State, res.Seconds, res.Deadline, res.Note)), nil
}

func (t *tools) cancelVideo(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	id, ok := intArg(req.GetArguments()["id"])
	if !ok || id < 1 {
		return badArgs(registry.CancelVideo, "id must be a video job id (a positive integer) from generate_video"), nil
	}
	var res ipc.VideoJobResult
	if err := t.call(ctx, ipc.TypeCancelVideo, ipc.CancelVideoArgs{ID: int64(id)}, &res); err != nil {
		return toolError(registry.CancelVideo, err), nil
	}
	return mcpgo.NewToolResultText(fmt.Sprintf("Video job %d: %s. %s", res.ID, res.State, res.Note)), nil
}

func (t *tools) listVideos(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var res ipc.ListVideosResult
	if err := t.call(ctx, ipc.TypeListVideos, ipc.ListVideosArgs{}, &res); err != nil {
		return toolError(registry.ListVideos, err), nil
	}
	return mcpgo.NewToolResultText(videosText(res)), nil
}

// videosText is list_videos' answer, one line a job; the prompts and the
// reasons came from models and providers, so each stays on its line.
func videosText(res ipc.ListVideosResult) string {
	if len(res.Jobs) == 0 {
		return fmt.Sprintf("No video jobs in this group in the last %d days.", res.Days)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Video jobs of this group in the last %d days, newest first:\n", res.Days)
	for _, j := range res.Jobs {
		fmt.Fprintf(&b, "Video %d: %s (asked %s", j.ID, videoState(j), j.Asked)
		if j.Seconds > 0 {
			fmt.Fprintf(&b, ", %ds", j.Seconds)
		}
		fmt.Fprintf(&b, "): %q\n", oneLine(j.Prompt, 200))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func videoState(j ipc.VideoJobInfo) string {
	why := oneLine(j.Error, 300)
	switch j.State {
	case "submitted":
		if j.Progress > 0 {
			return fmt.Sprintf("being made, %d%% done; it is sent by itself when ready", j.Progress)
		}
		return "being made; it is sent by itself when ready"
	case "sending":
		return "made, being sent to the chat"
	case "done":
		if j.Sent {
			return "sent to the chat as ref:" + j.Ref
		}
		return "made (ref:" + j.Ref + ") but not sent: " + why
	case "failed":
		return "failed: " + why
	case "cancelled":
		return "cancelled"
	}
	return oneLine(j.State, 40)
}
