package tools

import "time"

// The arguments and results of the media tools: what a tool call carries,
// whichever face (the agent in process, MCP over IPC files) made it.

// FetchMediaArgs asks for the bytes of one ref.
type FetchMediaArgs struct {
	MediaRef string `json:"mediaRef"`
}

// FetchMediaResult tells where the bytes were put. Path is relative to the
// group folder (groups/<folder>/), e.g. "media/tg_abc_photo.jpg".
type FetchMediaResult struct {
	Ref      string `json:"ref"`
	Kind     string `json:"kind"`
	Name     string `json:"name,omitempty"`
	MIME     string `json:"mime"`
	Declared string `json:"declared_mime,omitempty"` // what the sender claimed, when it differed
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Path     string `json:"path"`
	Width    int    `json:"width,omitempty"`
	Height   int    `json:"height,omitempty"`
	Duration string `json:"duration,omitempty"`
	Caption  string `json:"caption,omitempty"`
	Sender   string `json:"sender,omitempty"`
	Cached   bool   `json:"cached"` // served without a download
	// Transcript is what was said in audio (a voice note, an audio file);
	// TranscriptNote says why there is none, or where it came from.
	Transcript     string `json:"transcript,omitempty"`
	TranscriptNote string `json:"transcript_note,omitempty"`
}

// ListMediaArgs narrows list_media.
type ListMediaArgs struct {
	Limit int    `json:"limit,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// MediaItem is one entry of list_media: metadata only, no secrets.
type MediaItem struct {
	Ref      string    `json:"ref"`
	Kind     string    `json:"kind"`
	Name     string    `json:"name,omitempty"`
	Size     int64     `json:"size,omitempty"`
	MIME     string    `json:"mime,omitempty"`
	Sender   string    `json:"sender,omitempty"`
	Time     time.Time `json:"time"`
	Caption  string    `json:"caption,omitempty"`
	Duration string    `json:"duration,omitempty"`
	Expires  time.Time `json:"expires"`
}

// ListMediaResult is the answer to list_media, newest first.
type ListMediaResult struct {
	Items []MediaItem `json:"items"`
}

// SendMessageArgs sends text. Chat is honoured only for the main group.
type SendMessageArgs struct {
	Text string `json:"text"`
	Chat string `json:"chat,omitempty"`
}

// SendMediaArgs sends a file inside the group folder.
type SendMediaArgs struct {
	Path    string `json:"path"`
	Caption string `json:"caption,omitempty"`
	Chat    string `json:"chat,omitempty"`
}

// SendResult is the channel's delivery report.
type SendResult struct {
	Chat       string   `json:"chat"`
	MessageIDs []string `json:"message_ids"`
}
