package tools

import (
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
	Name: GenerateImage, Service: Media, Offered: imageConfigured,
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
	Name: Speak, Service: Media, Offered: speechConfigured,
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
	Name: GenerateVideo, Service: Media, Offered: videoConfigured,
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
	Name: CancelVideo, Service: Media, Offered: videoConfigured,
	Host: bind(MediaHost.CancelVideo),
	Def: fixed(CancelVideo,
		mcpgo.WithDescription("Cancel a video job of this group that generate_video started and that is not finished: "+
			"nothing is sent, and the provider stops. list_videos shows the jobs and their ids."),
		annotate(hints{destructive: true, idempotent: true, openWorld: true}),
		mcpgo.WithInteger("id", mcpgo.Required(), mcpgo.Description("The job id generate_video answered (or list_videos shows)."), mcpgo.Min(1)),
	),
}

var listVideos = Spec{
	Name: ListVideos, Service: Media, Offered: videoConfigured, Repeatable: true,
	Host: bind(MediaHost.ListVideos),
	Def: fixed(ListVideos,
		mcpgo.WithDescription("List this group's video jobs of the last 7 days, newest first (at most 20): id, whether "+
			"it is being made, was sent to the chat, failed (and why) or was cancelled, when it was asked for, and its "+
			"prompt. Use it to answer \"where is my video?\" or to find the id cancel_video needs."),
		annotate(hints{readOnly: true, idempotent: true}),
	),
}
