package mediahost_test

import (
	"context"
	"errors"
	"testing"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/media/mediahost"
	"github.com/botd-dev/botd/tools"
)

// service answers every media tool with an error naming itself (or
// panics), so a call shows which service the host gave it to.
type service struct {
	name  string
	panic bool
}

func (s service) answer() *ipc.Error {
	if s.panic {
		panic("a bug in " + s.name)
	}
	return ipc.Errorf(ipc.CodeNotFound, "answered by %s", s.name)
}

func (s service) Fetch(context.Context, *groups.Group, string) (*ipc.FetchMediaResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) List(context.Context, *groups.Group, ipc.ListMediaArgs) (*ipc.ListMediaResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) FetchURL(context.Context, *groups.Group, ipc.FetchURLArgs) (*ipc.FetchURLResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) WebSearch(context.Context, *groups.Group, ipc.WebSearchArgs) (*ipc.WebSearchResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) GenerateImage(context.Context, *groups.Group, ipc.GenerateImageArgs) (*ipc.GeneratedResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) Speak(context.Context, *groups.Group, ipc.SpeakArgs) (*ipc.GeneratedResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) GenerateVideo(context.Context, *groups.Group, ipc.GenerateVideoArgs) (*ipc.VideoJobResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) CancelVideo(context.Context, *groups.Group, ipc.CancelVideoArgs) (*ipc.VideoJobResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) ListVideos(context.Context, *groups.Group, ipc.ListVideosArgs) (*ipc.ListVideosResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) SendMessage(context.Context, *groups.Group, ipc.SendMessageArgs) (*ipc.SendResult, *ipc.Error) {
	return nil, s.answer()
}
func (s service) SendMedia(context.Context, *groups.Group, ipc.SendMediaArgs) (*ipc.SendResult, *ipc.Error) {
	return nil, s.answer()
}

// owner is the service each media tool belongs to.
var owner = map[string]string{
	tools.FetchMedia: "media", tools.ListMedia: "media",
	tools.FetchURL: "links", tools.WebSearch: "links",
	tools.GenerateImage: "generation", tools.Speak: "generation", tools.GenerateVideo: "generation",
	tools.CancelVideo: "generation", tools.ListVideos: "generation",
	tools.SendMessage: "sending", tools.SendMedia: "sending",
}

// args are valid arguments of each tool (the registry decodes strictly).
var args = map[string]any{
	tools.FetchMedia: ipc.FetchMediaArgs{MediaRef: "tg_1"}, tools.ListMedia: ipc.ListMediaArgs{},
	tools.FetchURL: ipc.FetchURLArgs{URL: "https://example.com/"}, tools.WebSearch: ipc.WebSearchArgs{Query: "rota"},
	tools.GenerateImage: ipc.GenerateImageArgs{Prompt: "a cat"}, tools.Speak: ipc.SpeakArgs{Text: "hi"},
	tools.GenerateVideo: ipc.GenerateVideoArgs{Prompt: "a cat"}, tools.CancelVideo: ipc.CancelVideoArgs{ID: 1},
	tools.ListVideos: ipc.ListVideosArgs{}, tools.SendMessage: ipc.SendMessageArgs{Text: "hi"},
	tools.SendMedia: ipc.SendMediaArgs{Path: "a.png"},
}

func newSet(t *testing.T) *groups.Set {
	t.Helper()
	set, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: "telegram:-100"}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func code(t *testing.T, err error) (string, string) {
	t.Helper()
	var e *ipc.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want a tool error", err)
	}
	return e.Code, e.Message
}

// Every media tool of the registry reaches the service that owns it.
func TestEachToolReachesItsService(t *testing.T) {
	h := mediahost.New(mediahost.Options{Media: service{name: "media"}, Links: service{name: "links"},
		Generation: service{name: "generation"}, Sending: service{name: "sending"}, Groups: newSet(t)})
	seen := 0
	for _, spec := range tools.All {
		if spec.Service != tools.Media {
			continue
		}
		seen++
		want, ok := owner[spec.Name]
		if !ok {
			t.Errorf("%s is a media tool with no owner in this test", spec.Name)
			continue
		}
		err := h.Caller("family").Call(context.Background(), spec.Name, args[spec.Name], nil)
		if c, msg := code(t, err); c != ipc.CodeNotFound || msg != "answered by "+want {
			t.Errorf("%s: %s %q, want it answered by %s", spec.Name, c, msg, want)
		}
	}
	if seen != len(owner) {
		t.Errorf("the registry has %d media tools, this test knows %d", seen, len(owner))
	}
}

// A host given only some services answers the others' tools with a
// clear error; a folder that is no registered group is refused; a panic
// in a service is an internal error of that request, and the host goes
// on.
func TestRefusalsAndPanics(t *testing.T) {
	ctx := context.Background()
	h := mediahost.New(mediahost.Options{Media: service{name: "media"}, Sending: service{name: "sending", panic: true}, Groups: newSet(t)})
	for _, tc := range []struct {
		name, group, tool string
		want              string
	}{
		{"service not given", "family", tools.FetchURL, ipc.CodeBadRequest},
		{"unknown group", "strangers", tools.FetchMedia, ipc.CodeForbidden},
		{"panic", "family", tools.SendMessage, ipc.CodeInternal},
		{"after the panic", "family", tools.FetchMedia, ipc.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.Caller(tc.group).Call(ctx, tc.tool, args[tc.tool], nil)
			if c, msg := code(t, err); c != tc.want || msg == "" {
				t.Errorf("%s: %s %q, want %s", tc.tool, c, msg, tc.want)
			}
		})
	}
}
