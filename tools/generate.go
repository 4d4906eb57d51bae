package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Media generation: the host's media service answers these (it holds the
// provider keys, the cache and the channels). Each is offered only when
// its model is configured, so a model is never shown a tool that can only
// fail. None but list_videos (a read) is Repeatable: each costs money and
// may send to the chat, so one caught by a crash is answered send_unknown.

// Tool names of media generation.
const (
	GenerateImage = "generate_image"
	Speak         = "speak"
	GenerateVideo = "generate_video"
	CancelVideo   = "cancel_video"
	ListVideos    = "list_videos"
)

func imageConfigured(o Offer) bool  { return o.Generate.Image }
func speechConfigured(o Offer) bool { return o.Generate.Speech }
func videoConfigured(o Offer) bool  { return o.Generate.Video }

var generateImage = Spec{
	Name: GenerateImage, Service: Media, Offered: imageConfigured, Needs: NeedsAdmin, MCP: generateImageMCP,
	Host: bind(MediaHost.GenerateImage),
	Def: fixed(GenerateImage,
		withDescription("Make an image from a description, or change an image shared in the chat (with source_ref). "+
			"For example \"a birthday card for Anna with balloons\" or \"turn this photo into a pencil sketch\". The image is saved "+
			"in the group folder, becomes a ref of its own (later requests can edit it again by that ref) and is sent to "+
			"the chat at once unless send is false. A refusal by the provider comes back as a sentence: tell the chat "+
			"in your own words, and do not retry the same request. After [in_progress] it is still being made and "+
			"is sent when done (with send false it is only saved, and list_media shows it then): do not ask for it again."),
		annotate(Hints{OpenWorld: true}),
		requiredText("prompt", "What to draw, or how to change the source image; in detail.", 4000),
		optionalText("size", "WIDTHxHEIGHT, e.g. 1024x1024 (square), 1536x1024 (landscape), 1024x1536 (portrait); default the model's.", 16),
		optionalText("source_ref", "The ref of an image to edit (from a placeholder, list_media, or an earlier generate_image).", 128),
		optionalText("caption", "Optional caption sent with the image.", 1024),
		withBoolean("send",
			description("Send it to the chat now (default true). false: only save it; put MEDIA:./<path> on a line "+
				"of your answer to send it with your text.")),
	),
}

var speak = Spec{
	Name: Speak, Service: Media, Offered: speechConfigured, Needs: NeedsAdmin, MCP: speakMCP,
	Host: bind(MediaHost.Speak),
	Def: fixed(Speak,
		withDescription("Say something as a voice note, when someone asks for a spoken answer or sent a voice note. "+
			"The text is spoken by a speech model and sent to the chat as a voice message (on Slack as an audio file). "+
			"To speak your whole final answer instead, put [[audio_as_voice]] in it."),
		annotate(Hints{OpenWorld: true}),
		requiredText("text", "The words to speak, as they should be said (no markdown).", 4096),
		optionalText("voice", "A voice of the speech model, e.g. alloy, coral, nova, onyx, sage; default the configured one.", 64),
		withBoolean("send",
			description("Send it now (default true). false: only save it (put MEDIA:./<path> in your answer).")),
	),
}

var generateVideo = Spec{
	Name: GenerateVideo, Service: Media, Offered: videoConfigured, Needs: NeedsAdmin, MCP: generateVideoMCP,
	Host: bind(MediaHost.GenerateVideo),
	Def: fixed(GenerateVideo,
		withDescription("Start making a short video clip from a description, only when someone asks for a video. "+
			"Videos cost far more than images. It takes minutes: the tool answers at once with a job id, and the "+
			"finished video is sent to the chat by itself (also after a restart). Tell the chat it is on its way; "+
			"cancel_video stops it."),
		annotate(Hints{OpenWorld: true}),
		requiredText("prompt", "What the video shows: subject, setting, camera, style.", 4000),
		withInteger("seconds",
			description("Length: 4, 8 or 12 seconds (default 4)."),
			minimum(4), maximum(12)),
		optionalText("size", "WIDTHxHEIGHT: 1280x720 (landscape) or 720x1280 (portrait, the default).", 16),
	),
}

var cancelVideo = Spec{
	Name: CancelVideo, Service: Media, Offered: videoConfigured, Needs: NeedsAdmin, MCP: cancelVideoMCP,
	Host: bind(MediaHost.CancelVideo),
	Def: fixed(CancelVideo,
		withDescription("Cancel an unfinished video job of this group that generate_video started. "+
			"Nothing is sent, and the provider stops. list_videos shows the jobs and their ids."),
		annotate(Hints{Destructive: true, Idempotent: true, OpenWorld: true}),
		withInteger("id", required(), description("The job id generate_video answered (or list_videos shows)."), minimum(1)),
	),
}

var listVideos = Spec{
	Name: ListVideos, Service: Media, Offered: videoConfigured, Repeatable: true, Standby: true, MCP: listVideosMCP,
	Host: bind(MediaHost.ListVideos),
	Def: fixed(ListVideos,
		withDescription("List this group's video jobs of the last 7 days, to answer \"where is my video?\" or find an id. "+
			"Newest first (at most 20): id, whether it is being made, was sent to the chat, failed (and why) or was "+
			"cancelled, when it was asked for, and its prompt; cancel_video takes the id."),
		annotate(Hints{ReadOnly: true, Idempotent: true}),
	),
}

// generationError answers a failed generation: a refusal or a spent
// budget is a plain sentence the model passes on, not an error dump.
func generationError(tool string, err error) *Result {
	var ie *Error
	if errors.As(err, &ie) && (ie.Code == CodeRefused || ie.Code == CodeOverBudget) {
		r := TextResult(ie.Message + " Tell the chat so in one sentence; do not try again with the same request.")
		r.IsError = true
		return r
	}
	return ToolError(tool, err)
}

func generateImageMCP(e Env, ctx context.Context, in Args) *Result {
	var a GenerateImageArgs
	var err error
	if a.Prompt, err = requiredArg(in, "prompt", "prompt is required: describe the image"); err == nil {
		err = readStrings(in, into{"size", &a.Size}, into{"source_ref", &a.SourceRef}, into{"caption", &a.Caption})
	}
	if err == nil {
		a.Send, err = boolArg(in, "send", true)
	}
	if err != nil {
		return BadArgs(GenerateImage, "%v", err)
	}
	a.SourceRef = strings.TrimPrefix(strings.TrimSpace(a.SourceRef), "ref:")
	var res GeneratedResult
	if err := e.CallLong(ctx, GenerateImage, a, &res); err != nil {
		return generationError(GenerateImage, err)
	}
	return TextResult(generatedText("Image", res))
}

func speakMCP(e Env, ctx context.Context, in Args) *Result {
	var a SpeakArgs
	var err error
	if a.Text, err = requiredArg(in, "text", "text is required: the words to speak"); err == nil {
		err = readStrings(in, into{"voice", &a.Voice})
	}
	if err == nil {
		a.Send, err = boolArg(in, "send", true)
	}
	if err != nil {
		return BadArgs(Speak, "%v", err)
	}
	var res GeneratedResult
	if err := e.CallLong(ctx, Speak, a, &res); err != nil {
		return generationError(Speak, err)
	}
	return TextResult(generatedText("Voice note", res))
}

// generatedText tells the model what was made and where it went; the
// provider's note came from a model that read a chat's prompt, so it is
// kept on one line.
func generatedText(what string, res GeneratedResult) string {
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

func generateVideoMCP(e Env, ctx context.Context, in Args) *Result {
	var a GenerateVideoArgs
	var err error
	if a.Prompt, err = requiredArg(in, "prompt", "prompt is required: describe the video"); err != nil {
		return BadArgs(GenerateVideo, "%v", err)
	}
	if v, ok := in["seconds"]; ok && v != nil {
		n, ok := IntArg(v)
		if s, isStr := v.(string); isStr {
			_, err := fmt.Sscan(s, &n)
			ok = err == nil
		}
		if !ok || (n != 4 && n != 8 && n != 12) {
			return BadArgs(GenerateVideo, "seconds must be 4, 8 or 12")
		}
		a.Seconds = n
	}
	if a.Size, _, err = StringArg(in, "size"); err != nil {
		return BadArgs(GenerateVideo, "%v", err)
	}
	var res VideoJobResult
	if err := e.Call(ctx, GenerateVideo, a, &res); err != nil {
		return generationError(GenerateVideo, err)
	}
	return TextResult(fmt.Sprintf("Video job %d started with %s (%s, %ds); it must be ready by %s. %s",
		res.ID, res.Model, res.State, res.Seconds, res.Deadline, res.Note))
}

func cancelVideoMCP(e Env, ctx context.Context, in Args) *Result {
	id, ok := IntArg(in["id"])
	if !ok || id < 1 {
		return BadArgs(CancelVideo, "id must be a video job id (a positive integer) from generate_video")
	}
	var res VideoJobResult
	if err := e.Call(ctx, CancelVideo, CancelVideoArgs{ID: int64(id)}, &res); err != nil {
		return ToolError(CancelVideo, err)
	}
	return TextResult(fmt.Sprintf("Video job %d: %s. %s", res.ID, res.State, res.Note))
}

func listVideosMCP(e Env, ctx context.Context, in Args) *Result {
	var res ListVideosResult
	if err := e.Call(ctx, ListVideos, ListVideosArgs{}, &res); err != nil {
		return ToolError(ListVideos, err)
	}
	return TextResult(videosText(res))
}

// videosText is list_videos' answer, one line a job; the prompts and the
// reasons came from models and providers, so each stays on its line.
func videosText(res ListVideosResult) string {
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

func videoState(j VideoJobInfo) string {
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
