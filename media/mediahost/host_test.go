package mediahost_test

import (
	"context"
	"errors"
	"testing"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/media/mediahost"
	"github.com/botd-dev/botd/tools"
)

// service answers every media tool with an error naming itself (or
// panics), so a call shows which service the host gave it to.
type service struct {
	name  string
	panic bool
}

func (s service) answer() *tools.Error {
	if s.panic {
		panic("a bug in " + s.name)
	}
	return tools.Errorf(tools.CodeNotFound, "answered by %s", s.name)
}

func (s service) Fetch(context.Context, *groups.Group, string) (*tools.FetchMediaResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) List(context.Context, *groups.Group, tools.ListMediaArgs) (*tools.ListMediaResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) FetchURL(context.Context, *groups.Group, tools.FetchURLArgs) (*tools.FetchURLResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) WebSearch(context.Context, *groups.Group, tools.WebSearchArgs) (*tools.WebSearchResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) GenerateImage(context.Context, *groups.Group, tools.GenerateImageArgs) (*tools.GeneratedResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) Speak(context.Context, *groups.Group, tools.SpeakArgs) (*tools.GeneratedResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) GenerateVideo(context.Context, *groups.Group, tools.GenerateVideoArgs) (*tools.VideoJobResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) CancelVideo(context.Context, *groups.Group, tools.CancelVideoArgs) (*tools.VideoJobResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) ListVideos(context.Context, *groups.Group, tools.ListVideosArgs) (*tools.ListVideosResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) SendMessage(context.Context, *groups.Group, tools.SendMessageArgs) (*tools.SendResult, *tools.Error) {
	return nil, s.answer()
}
func (s service) SendMedia(context.Context, *groups.Group, tools.SendMediaArgs) (*tools.SendResult, *tools.Error) {
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
	tools.FetchMedia: tools.FetchMediaArgs{MediaRef: "tg_1"}, tools.ListMedia: tools.ListMediaArgs{},
	tools.FetchURL: tools.FetchURLArgs{URL: "https://example.com/"}, tools.WebSearch: tools.WebSearchArgs{Query: "rota"},
	tools.GenerateImage: tools.GenerateImageArgs{Prompt: "a cat"}, tools.Speak: tools.SpeakArgs{Text: "hi"},
	tools.GenerateVideo: tools.GenerateVideoArgs{Prompt: "a cat"}, tools.CancelVideo: tools.CancelVideoArgs{ID: 1},
	tools.ListVideos: tools.ListVideosArgs{}, tools.SendMessage: tools.SendMessageArgs{Text: "hi"},
	tools.SendMedia: tools.SendMediaArgs{Path: "a.png"},
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
	var e *tools.Error
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
		if c, msg := code(t, err); c != tools.CodeNotFound || msg != "answered by "+want {
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
		{"service not given", "family", tools.FetchURL, tools.CodeBadRequest},
		{"unknown group", "strangers", tools.FetchMedia, tools.CodeForbidden},
		{"panic", "family", tools.SendMessage, tools.CodeInternal},
		{"after the panic", "family", tools.FetchMedia, tools.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.Caller(tc.group).Call(ctx, tc.tool, args[tc.tool], nil)
			if c, msg := code(t, err); c != tc.want || msg == "" {
				t.Errorf("%s: %s %q, want %s", tc.tool, c, msg, tc.want)
			}
		})
	}
}
