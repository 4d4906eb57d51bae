package modelview

import (
	"context"
	"strings"
	"testing"

	registry "github.com/botd-dev/botd/tools"
)

// panickyHost fails the way a bug in the host would.
type panickyHost struct{}

func (panickyHost) Call(context.Context, string, any, any) error { panic("host bug") }

// Whatever a model asks, Run answers a result it can read: a tool the
// session does not offer, an unknown one, and a tool whose host panics.
func TestRunAnswersEveryCall(t *testing.T) {
	h := newFakeHost(t, "family")
	plain, err := New(Options{GroupDir: h.dir, Caller: h, Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	broken, err := New(Options{GroupDir: h.dir, Caller: panickyHost{}, Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    *Session
		tool string
		args registry.Args
		want string
	}{
		{"not offered", plain, registry.GenerateImage, registry.Args{"prompt": "a cat"}, `generate_image failed [bad_request]: there is no tool called "generate_image"`},
		{"unknown", plain, "rm_rf", nil, `rm_rf failed [bad_request]: there is no tool called "rm_rf"`},
		{"host panics", broken, registry.ListMedia, nil, "list_media failed [internal]: the tool failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.s.Run(context.Background(), tc.tool, tc.args)
			if !r.IsError || len(r.Parts) != 1 || r.Parts[0].Text != tc.want {
				t.Fatalf("Run = %+v, want the error %q", r, tc.want)
			}
		})
	}
	// An offered tool runs.
	if r := plain.Run(context.Background(), registry.ListMedia, nil); r.IsError || !strings.Contains(r.Parts[0].Text, "No media") {
		t.Fatalf("list_media = %+v", r)
	}
}
