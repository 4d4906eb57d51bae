package ipc_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// Every request type the registry declares, left in processing/ by a
// crash, is settled at the next start as its Spec says: a repeatable one
// is carried out again, any other is answered send_unknown and never
// reaches the handler.
func TestInterruptedRequestsFollowTheRegistry(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data", "ipc")
	fam := ipc.GroupLayout(root, "fam")
	must(t, fam.Ensure())
	types := ipc.Types(tools.IPCTypes())
	if len(types) == 0 {
		t.Fatal("the registry declares no IPC request types")
	}
	for typ := range types {
		writeRequest(t, fam.Processing(), "crash-"+typ, typ, struct{}{}, time.Now())
	}
	h := &funcHandler{fn: func(context.Context, string, *tools.Request) (any, *tools.Error) { return struct{}{}, nil }}
	r := &rig{root: root, h: h, log: &logRec{}}
	r.start(t, ipc.HostOptions{}, "fam")

	var wantAgain []string
	for typ, repeatable := range types {
		resp := response(t, fam, "crash-"+typ)
		switch {
		case repeatable && !resp.OK:
			t.Errorf("%s (repeatable) was not carried out again: %+v", typ, resp.Error)
		case !repeatable && (resp.Error == nil || resp.Error.Code != tools.CodeSendUnknown):
			t.Errorf("%s (not repeatable) answered %+v, want send_unknown", typ, resp)
		}
		if repeatable {
			wantAgain = append(wantAgain, typ)
		}
	}
	r.stop()
	var got []string
	for _, c := range h.Calls() {
		got = append(got, c.Type)
	}
	slices.Sort(got)
	slices.Sort(wantAgain)
	if !slices.Equal(got, wantAgain) {
		t.Errorf("carried out again: %v, want exactly the repeatable %v", got, wantAgain)
	}
	// The sends are what a crash must never repeat.
	for _, typ := range []string{tools.SendMessage, tools.SendMedia, tools.GenerateImage, tools.Speak, tools.GenerateVideo} {
		if types.Repeatable(typ) {
			t.Errorf("%s is declared repeatable", typ)
		}
	}
}

// A host without request types would quarantine every request: it
// refuses to start instead.
func TestHostNeedsTypes(t *testing.T) {
	host := ipc.NewHost(ipc.HostOptions{Root: filepath.Join(t.TempDir(), "ipc"), Groups: []string{"fam"}, Handler: &funcHandler{}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := host.Start(ctx); err == nil {
		cancel()
		host.Wait()
		t.Fatal("a host without Types started")
	}
}
