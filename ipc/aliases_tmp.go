package ipc

// TEMPORARY (issue 39): the tool types, codes and progress moved to their
// owners (package tools, internal/progress); media/ still spells them
// ipc.X while another branch splits it into packages. These aliases are
// for media/ only. To remove them: rewrite each ipc.X in media/ to what
// its alias below names (ipc.TypeFetchMedia → tools.FetchMedia,
// ipc.ReportProgress → progress.Report, ipc.ProgressQueued →
// progress.Queued, …), delete this file, and drop media from the
// exemption in config/layering_test.go (TestServicesImportNoProtocol).
// Nothing else may use them.

import (
	"context"

	"github.com/botd-dev/botd/internal/progress"
	"github.com/botd-dev/botd/tools"
)

type (
	CancelVideoArgs   = tools.CancelVideoArgs
	Error             = tools.Error
	FetchMediaArgs    = tools.FetchMediaArgs
	FetchMediaResult  = tools.FetchMediaResult
	FetchURLArgs      = tools.FetchURLArgs
	FetchURLResult    = tools.FetchURLResult
	GenerateImageArgs = tools.GenerateImageArgs
	GenerateVideoArgs = tools.GenerateVideoArgs
	GeneratedResult   = tools.GeneratedResult
	Handler           = tools.Handler
	InProcess         = tools.InProcess
	ListMediaArgs     = tools.ListMediaArgs
	ListMediaResult   = tools.ListMediaResult
	ListVideosArgs    = tools.ListVideosArgs
	ListVideosResult  = tools.ListVideosResult
	MediaItem         = tools.MediaItem
	SearchResult      = tools.SearchResult
	SendMediaArgs     = tools.SendMediaArgs
	SendMessageArgs   = tools.SendMessageArgs
	SendResult        = tools.SendResult
	SpeakArgs         = tools.SpeakArgs
	VideoJobInfo      = tools.VideoJobInfo
	VideoJobResult    = tools.VideoJobResult
	WebSearchArgs     = tools.WebSearchArgs
	WebSearchResult   = tools.WebSearchResult
	TaskSchedule      = tools.TaskSchedule
	ScheduleTaskArgs  = tools.ScheduleTaskArgs
	ListTasksArgs     = tools.ListTasksArgs
	TaskIDArgs        = tools.TaskIDArgs
	TaskInfo          = tools.TaskInfo
	TaskResult        = tools.TaskResult
	ListTasksResult   = tools.ListTasksResult
	Progress          = progress.Progress
)

const (
	CodeBadRequest     = tools.CodeBadRequest
	CodeDownloadFailed = tools.CodeDownloadFailed
	CodeExpired        = tools.CodeExpired
	CodeForbidden      = tools.CodeForbidden
	CodeInProgress     = tools.CodeInProgress
	CodeInternal       = tools.CodeInternal
	CodeNotFound       = tools.CodeNotFound
	CodeOverBudget     = tools.CodeOverBudget
	CodeRateLimited    = tools.CodeRateLimited
	CodeRefused        = tools.CodeRefused
	CodeSendFailed     = tools.CodeSendFailed
	CodeTooLarge       = tools.CodeTooLarge
	CodeSendUnknown    = tools.CodeSendUnknown
	CodeBusy           = tools.CodeBusy
	CodeStandby        = tools.CodeStandby
	TypeCancelVideo    = tools.CancelVideo
	TypeFetchMedia     = tools.FetchMedia
	TypeFetchURL       = tools.FetchURL
	TypeGenerateImage  = tools.GenerateImage
	TypeGenerateVideo  = tools.GenerateVideo
	TypeListMedia      = tools.ListMedia
	TypeListVideos     = tools.ListVideos
	TypeSendMedia      = tools.SendMedia
	TypeSendMessage    = tools.SendMessage
	TypeSpeak          = tools.Speak
	TypeWebSearch      = tools.WebSearch

	ProgressQueued      = progress.Queued
	ProgressWorking     = progress.Working
	ProgressDownloading = progress.Downloading
)

// Errorf is tools.Errorf.
func Errorf(code, format string, args ...any) *tools.Error {
	return tools.Errorf(code, format, args...)
}

// ReportProgress is progress.Report.
func ReportProgress(ctx context.Context, p progress.Progress) { progress.Report(ctx, p) }
