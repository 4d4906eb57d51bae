package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/ipc"
)

// Media generation: the host's media service answers these (it holds the
// provider keys, the cache and the channels). Each is offered only when
// its model is configured, so a model is never shown a tool that can only
// fail. None but list_videos (a read) is Repeatable: each costs money and
// may send to the chat, so one caught by a crash is answered send_unknown.

// Tool names of media generation.
const (
	GenerateImage = ipc.TypeGenerateImage
	Speak         = ipc.TypeSpeak
	GenerateVideo = ipc.TypeGenerateVideo
	CancelVideo   = ipc.TypeCancelVideo
	ListVideos    = ipc.TypeListVideos
)

func imageConfigured(o Offer) bool  { return o.Generate.Image }
func speechConfigured(o Offer) bool { return o.Generate.Speech }
func videoConfigured(o Offer) bool  { return o.Generate.Video }

var generateImage = Spec{
	Name: GenerateImage, Service: Media, Offered: imageConfigured, Needs: NeedsAdmin, MCP: generateImageMCP,
	Host: bind(MediaHost.GenerateImage),
	Def: fixed(GenerateImage,
		mcpgo.WithDescription("Make an image from a description (\"a birthday card for Anna with balloons\"), or, with "+
			"source_ref, change an image shared in the chat (\"turn this photo into a pencil sketch\"). The image is saved "+
			"in the group folder, becomes a ref of its own (later requests can edit it again by that ref) and is sent to "+
			"the chat at once unless send is false. A refusal by the provider comes back as a sentence: tell the chat "+
			"in your own words, and do not retry the same request. After [in_progress] it is still being made and "+
			"is sent when done (with send false it is only saved, and list_media shows it then): do not ask for it again."),
		annotate(hints{openWorld: true}),
		requiredText("prompt", "What to draw, or how to change the source image; in detail.", 4000),
		optionalText("size", "WIDTHxHEIGHT, e.g. 1024x1024 (square), 1536x1024 (landscape), 1024x1536 (portrait); default the model's.", 16),
		optionalText("source_ref", "The ref of an image to edit (from a placeholder, list_media, or an earlier generate_image).", 128),
		optionalText("caption", "Optional caption sent with the image.", 1024),
		mcpgo.WithBoolean("send",
			mcpgo.Description("Send it to the chat now (default true). false: only save it; put MEDIA:./<path> on a line "+
				"of your answer to send it with your text.")),
	),
}

var speak = Spec{
	Name: Speak, Service: Media, Offered: speechConfigured, Needs: NeedsAdmin, MCP: speakMCP,
	Host: bind(MediaHost.Speak),
	Def: fixed(Speak,
		mcpgo.WithDescription("Say something as a voice note: the text is spoken by a speech model and sent to the chat "+
			"as a voice message (on Slack as an audio file). Use it when someone asks for a spoken answer or sent a voice "+
			"note and expects one back. To speak your whole final answer instead, put [[audio_as_voice]] in it."),
		annotate(hints{openWorld: true}),
		requiredText("text", "The words to speak, as they should be said (no markdown).", 4096),
		optionalText("voice", "A voice of the speech model, e.g. alloy, coral, nova, onyx, sage; default the configured one.", 64),
		mcpgo.WithBoolean("send",
			mcpgo.Description("Send it now (default true). false: only save it (put MEDIA:./<path> in your answer).")),
	),
}

var generateVideo = Spec{
	Name: GenerateVideo, Service: Media, Offered: videoConfigured, Needs: NeedsAdmin, MCP: generateVideoMCP,
	Host: bind(MediaHost.GenerateVideo),
	Def: fixed(GenerateVideo,
		mcpgo.WithDescription("Start making a short video clip from a description. It takes minutes: the tool answers "+
			"at once with a job id, and the finished video is sent to the chat by itself (also after a restart). Tell "+
			"the chat it is on its way; cancel_video stops it. Videos cost far more than images: make one only when asked."),
		annotate(hints{openWorld: true}),
		requiredText("prompt", "What the video shows: subject, setting, camera, style.", 4000),
		mcpgo.WithInteger("seconds",
			mcpgo.Description("Length: 4, 8 or 12 seconds (default 4)."),
			mcpgo.Min(4), mcpgo.Max(12)),
		optionalText("size", "WIDTHxHEIGHT: 1280x720 (landscape) or 720x1280 (portrait, the default).", 16),
	),
}

var cancelVideo = Spec{
	Name: CancelVideo, Service: Media, Offered: videoConfigured, Needs: NeedsAdmin, MCP: cancelVideoMCP,
	Host: bind(MediaHost.CancelVideo),
	Def: fixed(CancelVideo,
		mcpgo.WithDescription("Cancel a video job of this group that generate_video started and that is not finished: "+
			"nothing is sent, and the provider stops. list_videos shows the jobs and their ids."),
		annotate(hints{destructive: true, idempotent: true, openWorld: true}),
		mcpgo.WithInteger("id", mcpgo.Required(), mcpgo.Description("The job id generate_video answered (or list_videos shows)."), mcpgo.Min(1)),
	),
}

var listVideos = Spec{
	Name: ListVideos, Service: Media, Offered: videoConfigured, Repeatable: true, Standby: true, MCP: listVideosMCP,
	Host: bind(MediaHost.ListVideos),
	Def: fixed(ListVideos,
		mcpgo.WithDescription("List this group's video jobs of the last 7 days, newest first (at most 20): id, whether "+
			"it is being made, was sent to the chat, failed (and why) or was cancelled, when it was asked for, and its "+
			"prompt. Use it to answer \"where is my video?\" or to find the id cancel_video needs."),
		annotate(hints{readOnly: true, idempotent: true}),
	),
}

// generationError answers a failed generation: a refusal or a spent
// budget is a plain sentence the model passes on, not an error dump.
func generationError(tool string, err error) *mcpgo.CallToolResult {
	var ie *ipc.Error
	if errors.As(err, &ie) && (ie.Code == ipc.CodeRefused || ie.Code == ipc.CodeOverBudget) {
		return mcpgo.NewToolResultError(ie.Message + " Tell the chat so in one sentence; do not try again with the same request.")
	}
	return ToolError(tool, err)
}

func generateImageMCP(e Env, ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var a ipc.GenerateImageArgs
	var err error
	if a.Prompt, err = requiredArg(req, "prompt", "prompt is required: describe the image"); err == nil {
		err = readStrings(req, into{"size", &a.Size}, into{"source_ref", &a.SourceRef}, into{"caption", &a.Caption})
	}
	if err == nil {
		a.Send, err = boolArg(req, "send", true)
	}
	if err != nil {
		return BadArgs(GenerateImage, "%v", err), nil
	}
	a.SourceRef = strings.TrimPrefix(strings.TrimSpace(a.SourceRef), "ref:")
	var res ipc.GeneratedResult
	if err := e.CallLong(ctx, ipc.TypeGenerateImage, a, &res); err != nil {
		return generationError(GenerateImage, err), nil
	}
	return mcpgo.NewToolResultText(generatedText("Image", res)), nil
}

func speakMCP(e Env, ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var a ipc.SpeakArgs
	var err error
	if a.Text, err = requiredArg(req, "text", "text is required: the words to speak"); err == nil {
		err = readStrings(req, into{"voice", &a.Voice})
	}
	if err == nil {
		a.Send, err = boolArg(req, "send", true)
	}
	if err != nil {
		return BadArgs(Speak, "%v", err), nil
	}
	var res ipc.GeneratedResult
	if err := e.CallLong(ctx, ipc.TypeSpeak, a, &res); err != nil {
		return generationError(Speak, err), nil
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
		fmt.Fprintf(&b, " The model's note: %s", OneLine(res.Note, 500))
	}
	return b.String()
}

func generateVideoMCP(e Env, ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var a ipc.GenerateVideoArgs
	var err error
	if a.Prompt, err = requiredArg(req, "prompt", "prompt is required: describe the video"); err != nil {
		return BadArgs(GenerateVideo, "%v", err), nil
	}
	if v, ok := req.GetArguments()["seconds"]; ok && v != nil {
		n, ok := IntArg(v)
		if s, isStr := v.(string); isStr {
			_, err := fmt.Sscan(s, &n)
			ok = err == nil
		}
		if !ok || (n != 4 && n != 8 && n != 12) {
			return BadArgs(GenerateVideo, "seconds must be 4, 8 or 12"), nil
		}
		a.Seconds = n
	}
	if a.Size, _, err = StringArg(req, "size"); err != nil {
		return BadArgs(GenerateVideo, "%v", err), nil
	}
	var res ipc.VideoJobResult
	if err := e.Call(ctx, ipc.TypeGenerateVideo, a, &res); err != nil {
		return generationError(GenerateVideo, err), nil
	}
	return mcpgo.NewToolResultText(fmt.Sprintf("Video job %d started with %s (%s, %ds); it must be ready by %s. %s",
		res.ID, res.Model, res.State, res.Seconds, res.Deadline, res.Note)), nil
}

func cancelVideoMCP(e Env, ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	id, ok := IntArg(req.GetArguments()["id"])
	if !ok || id < 1 {
		return BadArgs(CancelVideo, "id must be a video job id (a positive integer) from generate_video"), nil
	}
	var res ipc.VideoJobResult
	if err := e.Call(ctx, ipc.TypeCancelVideo, ipc.CancelVideoArgs{ID: int64(id)}, &res); err != nil {
		return ToolError(CancelVideo, err), nil
	}
	return mcpgo.NewToolResultText(fmt.Sprintf("Video job %d: %s. %s", res.ID, res.State, res.Note)), nil
}

func listVideosMCP(e Env, ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var res ipc.ListVideosResult
	if err := e.Call(ctx, ipc.TypeListVideos, ipc.ListVideosArgs{}, &res); err != nil {
		return ToolError(ListVideos, err), nil
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
		fmt.Fprintf(&b, "): %q\n", OneLine(j.Prompt, 200))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func videoState(j ipc.VideoJobInfo) string {
	why := OneLine(j.Error, 300)
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
	return OneLine(j.State, 40)
}
