package llm

import (
	"context"
	"io"
	"time"
)

// The optional capabilities below are the vendors' APIs beside chat. A
// provider that has one implements its interface; callers find out with a
// type assertion. Like chat, each returns only *Error on failure and never
// retries: what to tell a chat member, and whether to try again, is the
// caller's policy.

// File is bytes to upload, read only through R (which the caller closes
// after the call returns, not before).
type File struct {
	R    io.ReaderAt
	Size int64
	// Name is the file's original name, perhaps a stranger's; vendors that
	// want a name get a safe one derived from it.
	Name string
	MIME string
}

// TranscribeRequest asks for the words spoken in Audio.
type TranscribeRequest struct {
	Model string
	Audio File
	// MaxBytes bounds the answer; 0 means 16 MB.
	MaxBytes int64
}

// Transcription is what a vendor heard.
type Transcription struct {
	// Text is empty, without error, when no speech was heard.
	Text string
	// Language is the spoken language as the vendor names it; empty when
	// it does not say.
	Language string
	// Duration is the audio's length as the vendor measured it; zero when
	// it does not say.
	Duration time.Duration
	// Truncated says the model stopped at its output limit: Text is not
	// all that was said.
	Truncated bool
}

// Transcriber turns audio into text.
type Transcriber interface {
	Transcribe(ctx context.Context, r TranscribeRequest) (Transcription, error)
}

// ImageRequest asks for one image.
type ImageRequest struct {
	Model  string
	Prompt string
	// Size is "1024x1024", "1536x1024", "1024x1536" or empty (the model's
	// default).
	Size string
	// Source, when set, is the image to edit.
	Source *File
	// MaxBytes bounds the decoded image.
	MaxBytes int64
}

// Image is one made image.
type Image struct {
	Data []byte
	// MIME is what the vendor declared; callers sniff the bytes.
	MIME string
	// Note is the vendor's own text beside the image, or the prompt it
	// revised.
	Note  string
	Usage MediaUsage
}

// MediaUsage is what a vendor reported for one media call; zero when it
// said nothing (unit-priced models).
type MediaUsage struct {
	InputTokens  int64
	OutputTokens int64
}

// ImageMaker makes and edits images.
type ImageMaker interface {
	MakeImage(ctx context.Context, r ImageRequest) (Image, error)
}

// SpeechRequest asks for Text spoken.
type SpeechRequest struct {
	Model, Text, Voice string
}

// Speech is audio being downloaded; the caller closes Body.
type Speech struct {
	Body io.ReadCloser
	MIME string
}

// SpeechMaker turns text into speech.
type SpeechMaker interface {
	MakeSpeech(ctx context.Context, r SpeechRequest) (Speech, error)
}

// VideoRequest asks for one clip.
type VideoRequest struct {
	Model   string
	Prompt  string
	Seconds int    // 0 is the model's default
	Size    string // "1280x720", "720x1280"...; empty is the default
}

// VideoState is where a video job is.
type VideoState string

const (
	VideoQueued     VideoState = "queued"
	VideoInProgress VideoState = "in_progress"
	VideoCompleted  VideoState = "completed"
	VideoFailed     VideoState = "failed"
)

// VideoJob is a vendor's view of a video job.
type VideoJob struct {
	ID       string
	State    VideoState
	Progress int
	Seconds  int
	// Err is why a failed job failed (an *Error; KindContentFilter for a
	// refusal).
	Err error
}

// VideoMaker runs video jobs: submitted, polled, downloaded, deleted.
type VideoMaker interface {
	SubmitVideo(ctx context.Context, r VideoRequest) (VideoJob, error)
	VideoStatus(ctx context.Context, id string) (VideoJob, error)
	// VideoContent streams the finished video; the caller closes it.
	VideoContent(ctx context.Context, id string) (io.ReadCloser, error)
	// CancelVideo deletes the job and its assets at the vendor.
	CancelVideo(ctx context.Context, id string) error
}
