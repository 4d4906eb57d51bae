package tools

// Media generation: generate_image, speak, generate_video, cancel_video
// and list_videos reach the host's media service with these requests
// (which may be repeated after a crash is the tool registry's to say).

// CodeRefused: the provider refused the request under its content policy;
// the message is a sentence fit for the chat.
const CodeRefused = "refused"

// CodeOverBudget: the group's daily budget (agent.max_cost_per_day) is
// spent.
const CodeOverBudget = "over_budget"

// GenerateImageArgs asks for an image, or an edit of SourceRef's.
type GenerateImageArgs struct {
	Prompt    string `json:"prompt"`
	Size      string `json:"size,omitempty"`
	SourceRef string `json:"source_ref,omitempty"`
	// Send delivers it to the group's chat at once; otherwise it is only
	// saved, for a MEDIA: line of the answer.
	Send    bool   `json:"send"`
	Caption string `json:"caption,omitempty"`
}

// SpeakArgs asks for text spoken.
type SpeakArgs struct {
	Text  string `json:"text"`
	Voice string `json:"voice,omitempty"`
	// Send delivers it as a voice note at once; otherwise it is only
	// saved (the agent sends it with its answer).
	Send bool `json:"send"`
}

// GeneratedResult is what was made: a ref of its own, the group's copy,
// and where it went.
type GeneratedResult struct {
	Ref      string `json:"ref"`
	Kind     string `json:"kind"`
	MIME     string `json:"mime"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Path     string `json:"path"` // relative to the group folder
	Duration string `json:"duration,omitempty"`
	// Placeholder is how the ref reads in the conversation.
	Placeholder string `json:"placeholder"`
	// Note is the provider's own words (a revised prompt, Gemini's text).
	Note       string   `json:"note,omitempty"`
	Model      string   `json:"model"`
	Cost       string   `json:"cost,omitempty"` // "$0.04", empty when unpriced
	Chat       string   `json:"chat,omitempty"`
	MessageIDs []string `json:"message_ids,omitempty"`
}

// GenerateVideoArgs starts a video job.
type GenerateVideoArgs struct {
	Prompt  string `json:"prompt"`
	Seconds int    `json:"seconds,omitempty"`
	Size    string `json:"size,omitempty"`
}

// VideoJobResult describes a video job.
type VideoJobResult struct {
	ID       int64  `json:"id"`
	State    string `json:"state"`
	Model    string `json:"model"`
	Seconds  int    `json:"seconds,omitempty"`
	Deadline string `json:"deadline"`
	Note     string `json:"note,omitempty"`
}

// CancelVideoArgs names a job of the asking group.
type CancelVideoArgs struct {
	ID int64 `json:"id"`
}

// ListVideosArgs asks for the asking group's recent video jobs; it has no
// fields (the group is the IPC directory's).
type ListVideosArgs struct{}

// ListVideosResult is the group's video jobs of the last Days days,
// newest first, at most a page of them.
type ListVideosResult struct {
	Jobs []VideoJobInfo `json:"jobs"`
	Days int            `json:"days"`
}

// VideoJobInfo is one video job as list_videos shows it.
type VideoJobInfo struct {
	ID    int64  `json:"id"`
	State string `json:"state"` // submitted | sending | done | failed | cancelled
	// Prompt is one line, truncated.
	Prompt   string `json:"prompt"`
	Seconds  int    `json:"seconds,omitempty"`
	Progress int    `json:"progress,omitempty"`
	// Asked is when it was asked for, in botd's time zone
	// ("2006-01-02 15:04").
	Asked string `json:"asked"`
	// Sent: a done job's video reached the chat.
	Sent bool   `json:"sent,omitempty"`
	Ref  string `json:"ref,omitempty"`
	// Error is why a job failed, or why its video could not be sent.
	Error string `json:"error,omitempty"`
}
