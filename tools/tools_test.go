package tools_test

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/tools"
)

// reached records which service method a request reached. Each method
// records its own name (runtime.Caller), so a binding to the wrong method
// shows.
type reached struct{ methods []string }

func (r *reached) hit() {
	pc, _, _, _ := runtime.Caller(1)
	name := runtime.FuncForPC(pc).Name()
	r.methods = append(r.methods, name[strings.LastIndexByte(name, '.')+1:])
}

type fakeMedia struct{ reached }

func (f *fakeMedia) Fetch(context.Context, *groups.Group, string) (*tools.FetchMediaResult, *tools.Error) {
	f.hit()
	return &tools.FetchMediaResult{}, nil
}
func (f *fakeMedia) List(context.Context, *groups.Group, tools.ListMediaArgs) (*tools.ListMediaResult, *tools.Error) {
	f.hit()
	return &tools.ListMediaResult{}, nil
}
func (f *fakeMedia) SendMessage(context.Context, *groups.Group, tools.SendMessageArgs) (*tools.SendResult, *tools.Error) {
	f.hit()
	return &tools.SendResult{}, nil
}
func (f *fakeMedia) SendMedia(context.Context, *groups.Group, tools.SendMediaArgs) (*tools.SendResult, *tools.Error) {
	f.hit()
	return &tools.SendResult{}, nil
}
func (f *fakeMedia) GenerateImage(context.Context, *groups.Group, tools.GenerateImageArgs) (*tools.GeneratedResult, *tools.Error) {
	f.hit()
	return &tools.GeneratedResult{}, nil
}
func (f *fakeMedia) Speak(context.Context, *groups.Group, tools.SpeakArgs) (*tools.GeneratedResult, *tools.Error) {
	f.hit()
	return &tools.GeneratedResult{}, nil
}
func (f *fakeMedia) GenerateVideo(context.Context, *groups.Group, tools.GenerateVideoArgs) (*tools.VideoJobResult, *tools.Error) {
	f.hit()
	return &tools.VideoJobResult{}, nil
}
func (f *fakeMedia) CancelVideo(context.Context, *groups.Group, tools.CancelVideoArgs) (*tools.VideoJobResult, *tools.Error) {
	f.hit()
	return &tools.VideoJobResult{}, nil
}
func (f *fakeMedia) ListVideos(context.Context, *groups.Group, tools.ListVideosArgs) (*tools.ListVideosResult, *tools.Error) {
	f.hit()
	return &tools.ListVideosResult{}, nil
}
func (f *fakeMedia) FetchURL(context.Context, *groups.Group, tools.FetchURLArgs) (*tools.FetchURLResult, *tools.Error) {
	f.hit()
	return &tools.FetchURLResult{}, nil
}
func (f *fakeMedia) WebSearch(context.Context, *groups.Group, tools.WebSearchArgs) (*tools.WebSearchResult, *tools.Error) {
	f.hit()
	return &tools.WebSearchResult{}, nil
}

type fakeTasks struct {
	reached
	changes []string // the typ ServeChange was asked for
}

func (f *fakeTasks) ServeSchedule(_ context.Context, _ *groups.Group, reqID string, _ tools.ScheduleTaskArgs) (tools.TaskResult, *tools.Error) {
	f.hit()
	return tools.TaskResult{Task: tools.TaskInfo{Prompt: reqID}}, nil
}
func (f *fakeTasks) ServeList(context.Context, *groups.Group, tools.ListTasksArgs) (tools.ListTasksResult, *tools.Error) {
	f.hit()
	return tools.ListTasksResult{}, nil
}
func (f *fakeTasks) ServeChange(_ context.Context, _ *groups.Group, typ string, _ int64) (tools.TaskResult, *tools.Error) {
	f.hit()
	f.changes = append(f.changes, typ)
	return tools.TaskResult{}, nil
}

type fakeMessages struct{ reached }

func (f *fakeMessages) SearchMessages(context.Context, *groups.Group, tools.SearchMessagesArgs) (tools.MessagesResult, *tools.Error) {
	f.hit()
	return tools.MessagesResult{}, nil
}
func (f *fakeMessages) ReadMessages(context.Context, *groups.Group, tools.ReadMessagesArgs) (tools.MessagesResult, *tools.Error) {
	f.hit()
	return tools.MessagesResult{}, nil
}
func (f *fakeMessages) ListChats(context.Context, *groups.Group, tools.ListChatsArgs) (tools.ListChatsResult, *tools.Error) {
	f.hit()
	return tools.ListChatsResult{}, nil
}

// every Offer combination a server can be built for.
func offers() []tools.Offer {
	var out []tools.Offer
	for i := range 32 {
		out = append(out, tools.Offer{Main: i&1 != 0, GlobalMemory: i&2 != 0,
			Generate: tools.Generate{Image: i&4 != 0, Speech: i&8 != 0, Video: i&16 != 0}})
	}
	return out
}

// TestRegistry: every registered tool is whole — a definition under its
// own name, and a host handler exactly when the host answers it — and
// every method of the host services is the handler of a registered tool.
func TestRegistry(t *testing.T) {
	media, tasks, msgs := &fakeMedia{}, &fakeTasks{}, &fakeMessages{}
	svc := map[tools.Service]any{tools.Media: media, tools.Tasks: tasks, tools.Messages: msgs}
	g := &groups.Group{Folder: "fam"}
	for _, s := range tools.All {
		t.Run(s.Name, func(t *testing.T) {
			if s.Def == nil || s.MCP == nil {
				t.Fatalf("no MCP definition (%v) or no MCP handler (%v)", s.Def != nil, s.MCP != nil)
			}
			for _, o := range offers() {
				if d := s.Def(o); d.Name != s.Name || len(d.Description) < 40 {
					t.Fatalf("definition for %+v: name %q, description %q", o, d.Name, d.Description)
				}
			}
			if got, ok := tools.Lookup(s.Name); !ok || got.Name != s.Name {
				t.Errorf("Lookup(%q) = %v, %v", s.Name, got, ok)
			}
			_, known := tools.IPCTypes()[s.Name]
			// A standby answers reads only: a tool it answers is a host's,
			// repeatable, and not one that sends or changes tasks.
			if s.Standby && (s.Service == tools.Local || !s.Repeatable || !strings.HasPrefix(s.Name, "list_") &&
				!slices.Contains([]string{tools.FetchMedia, tools.FetchURL, tools.WebSearch, tools.SearchMessages, tools.ReadMessages}, s.Name)) {
				t.Errorf("answered on a standby, but it is not a read of the host")
			}
			switch {
			case s.Service == tools.Local && (s.Host != nil || known):
				t.Fatalf("a Local tool has a host handler (%v) or an IPC type (%v)", s.Host != nil, known)
			case s.Service == tools.Local:
				return
			case s.Host == nil || !known:
				t.Fatalf("answered by %v but host handler %v, IPC type %v", s.Service, s.Host != nil, known)
			}
			req := &tools.Request{ID: "r1", Type: s.Name, Args: json.RawMessage(`{}`)}
			if _, herr := tools.Serve(context.Background(), s.Service, svc[s.Service], g, req); herr != nil {
				t.Fatalf("Serve: %v", herr)
			}
			// Another service never answers it.
			for other := range svc {
				if other == s.Service {
					continue
				}
				if _, herr := tools.Serve(context.Background(), other, svc[other], g, req); herr == nil || herr.Code != tools.CodeBadRequest {
					t.Errorf("%v answered it: %v", other, herr)
				}
			}
		})
	}
	for iface, r := range map[reflect.Type]*reached{
		reflect.TypeFor[tools.MediaHost]():    &media.reached,
		reflect.TypeFor[tools.TasksHost]():    &tasks.reached,
		reflect.TypeFor[tools.MessagesHost](): &msgs.reached,
	} {
		for i := range iface.NumMethod() {
			if m := iface.Method(i).Name; !slices.Contains(r.methods, m) {
				t.Errorf("%s.%s answers no registered tool", iface.Name(), m)
			}
		}
	}
	slices.Sort(tasks.changes)
	if want := []string{tools.CancelTask, tools.PauseTask, tools.ResumeTask}; !slices.Equal(tasks.changes, want) {
		t.Errorf("ServeChange asked for %v, want %v", tasks.changes, want)
	}
}

// The host decodes arguments strictly: a field the tool does not take is
// a bad request, not silently dropped.
func TestServeRefusesUnknownArguments(t *testing.T) {
	req := &tools.Request{ID: "r1", Type: tools.SendMessage, Args: json.RawMessage(`{"text":"hi","group":"work"}`)}
	_, herr := tools.Serve(context.Background(), tools.Media, &fakeMedia{}, &groups.Group{Folder: "fam"}, req)
	if herr == nil || herr.Code != tools.CodeBadRequest || !strings.Contains(herr.Message, "bad arguments for send_message") {
		t.Fatalf("got %v, want bad_request", herr)
	}
}

// Dispatch routes each request to the handler of its tool's service, and
// refuses a type no service answers.
func TestDispatch(t *testing.T) {
	var got []string
	handler := func(name string) tools.Handler {
		return handlerFunc(func(_ context.Context, _ string, req *tools.Request) (any, *tools.Error) {
			got = append(got, name+":"+req.Type)
			return nil, nil
		})
	}
	d := tools.Dispatch{tools.Media: handler("media"), tools.Tasks: handler("tasks")}
	cases := []struct {
		typ, want string
		code      string
	}{
		{tools.FetchMedia, "media:fetch_media", ""},
		{tools.Speak, "media:speak", ""},
		{tools.ScheduleTask, "tasks:schedule_task", ""},
		{tools.Remember, "", tools.CodeBadRequest}, // Local: never a request
		{"drop_tables", "", tools.CodeBadRequest},
	}
	for _, tc := range cases {
		got = nil
		_, herr := d.Handle(context.Background(), "fam", &tools.Request{Type: tc.typ})
		if code := errCode(herr); code != tc.code {
			t.Errorf("%s: code %q, want %q", tc.typ, code, tc.code)
		}
		if tc.want != "" && !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%s reached %v, want %s", tc.typ, got, tc.want)
		}
		if tc.want == "" && len(got) != 0 {
			t.Errorf("%s reached %v", tc.typ, got)
		}
	}
}

// For offers each tool where its Spec says: the generation tools only
// when their model is configured.
func TestFor(t *testing.T) {
	names := func(o tools.Offer) []string {
		var out []string
		for _, s := range tools.For(o) {
			out = append(out, s.Name)
		}
		return out
	}
	base := names(tools.Offer{})
	for _, n := range []string{tools.GenerateImage, tools.Speak, tools.GenerateVideo, tools.CancelVideo, tools.ListVideos, tools.FetchURL, tools.WebSearch} {
		if slices.Contains(base, n) {
			t.Errorf("%s offered without its model or config", n)
		}
	}
	if got := names(tools.Offer{Generate: tools.Generate{Speech: true}}); !slices.Contains(got, tools.Speak) || slices.Contains(got, tools.GenerateImage) {
		t.Errorf("speech only: %v", got)
	}
	if got := names(tools.Offer{Internet: tools.Internet{Search: true}}); !slices.Contains(got, tools.WebSearch) || slices.Contains(got, tools.FetchURL) {
		t.Errorf("search only: %v", got)
	}
	if got := names(tools.Offer{Generate: tools.Generate{Image: true, Speech: true, Video: true}, Internet: tools.Internet{Fetch: true, Search: true}}); len(got) != len(tools.All) {
		t.Errorf("everything configured: %d tools, want all %d", len(got), len(tools.All))
	}
}

type handlerFunc func(ctx context.Context, group string, req *tools.Request) (any, *tools.Error)

func (f handlerFunc) Handle(ctx context.Context, group string, req *tools.Request) (any, *tools.Error) {
	return f(ctx, group, req)
}

func errCode(e *tools.Error) string {
	if e == nil {
		return ""
	}
	return e.Code
}

func TestIntArg(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int
		ok   bool
	}{
		{float64(5), 5, true}, {5, 5, true}, {int64(7), 7, true}, {json.Number("9"), 9, true},
		{2.5, 0, false}, {"5", 0, false}, {1e12, 0, false}, {json.Number("x"), 0, false},
	} {
		if got, ok := tools.IntArg(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("tools.IntArg(%#v) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
