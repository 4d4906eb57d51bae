package ipc_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// A group added while the host runs is served like one it started with:
// what already waited in its folder is answered, a new call is answered,
// each as that group; adding it again changes nothing.
func TestGroupAddedWhileRunningIsServed(t *testing.T) {
	h := &funcHandler{}
	r := newRig(t, h, ipc.HostOptions{}, "fam")
	late := r.layout("late")
	must(t, late.Ensure())
	writeRequest(t, late.Requests(), "early", tools.ListMedia, tools.ListMediaArgs{}, time.Now())

	if err := r.host.AddGroup("late"); err != nil {
		t.Fatalf("AddGroup: %v", err)
	}
	if resp := response(t, late, "early"); !resp.OK {
		t.Errorf("the request waiting before the add: %+v", resp)
	}
	if err := r.client(t, "late").Call(guard(t), tools.ListMedia, tools.ListMediaArgs{}, nil); err != nil {
		t.Fatalf("late's call: %v", err)
	}
	if err := r.host.AddGroup("late"); err != nil {
		t.Fatalf("AddGroup again: %v", err)
	}
	if got := r.host.Groups(); !slices.Equal(got, []string{"fam", "late"}) {
		t.Errorf("Groups() = %v", got)
	}
	var lates int
	for _, c := range h.Calls() {
		if c.Group == "late" {
			lates++
		}
	}
	if lates != 2 {
		t.Errorf("handler calls %+v, want two of late", h.Calls())
	}
}

// A folder added live is checked as at Start: one that is a symlink, has a
// symlinked subfolder, or is no plain name is refused with the reason,
// listed by Disabled, never served; the host and its groups go on.
func TestGroupAddedWhileRunningRefused(t *testing.T) {
	for _, tc := range []struct {
		name, group, want string
		prepare           func(t *testing.T, root string)
	}{
		{"folder is a symlink to another group's", "late", "late is a symlink", func(t *testing.T, root string) {
			must(t, os.Symlink("fam", filepath.Join(root, "late")))
		}},
		{"requests is a symlink to another group's", "late", "late/requests is a symlink", func(t *testing.T, root string) {
			must(t, os.Mkdir(filepath.Join(root, "late"), 0o750))
			must(t, os.Symlink("../fam/requests", filepath.Join(root, "late", "requests")))
		}},
		{"not a plain name", "../fam", "not a plain folder name", func(*testing.T, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &funcHandler{}
			r := newRig(t, h, ipc.HostOptions{}, "fam")
			tc.prepare(t, r.root)
			err := r.host.AddGroup(tc.group)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("AddGroup(%q) = %v, want %q", tc.group, err, tc.want)
			}
			if got := r.host.Groups(); !slices.Equal(got, []string{"fam"}) {
				t.Errorf("Groups() = %v", got)
			}
			if tc.group == "late" {
				if d := r.host.Disabled()["late"]; d == nil || !strings.Contains(d.Error(), tc.want) {
					t.Errorf("Disabled()[late] = %v", d)
				}
			}
			// fam is still served, and as fam only.
			if err := r.client(t, "fam").Call(guard(t), tools.ListMedia, tools.ListMediaArgs{}, nil); err != nil {
				t.Fatalf("fam after the refusal: %v", err)
			}
			for _, c := range h.Calls() {
				if c.Group != "fam" {
					t.Errorf("handled as %q: %+v", c.Group, c)
				}
			}
		})
	}
}

// A group removed while the host runs: the request a handler holds is
// finished and answered, the one still waiting is answered forbidden (no
// caller waits for nothing), a request written afterwards is not read, and
// the group can be added back.
func TestGroupRemovedWhileRunning(t *testing.T) {
	entered := make(chan string, 4)
	release := make(chan struct{})
	h := &funcHandler{fn: func(ctx context.Context, g string, req *tools.Request) (any, *tools.Error) {
		entered <- req.ID
		if req.ID == "held" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return tools.ListMediaResult{}, nil
	}}
	// One slot per group: "waiting" queues behind "held", unclaimed.
	r := newRig(t, h, ipc.HostOptions{PerGroup: 1}, "fam", "late")
	late := r.layout("late")
	writeRequest(t, late.Requests(), "held", tools.ListMedia, tools.ListMediaArgs{}, time.Now())
	r.host.Rescan()
	if id := recv(t, "held handled", entered); id != "held" {
		t.Fatalf("handled %q first", id)
	}
	writeRequest(t, late.Requests(), "waiting", tools.ListMedia, tools.ListMediaArgs{}, time.Now())
	r.host.Rescan()
	// Queued: its progress file says so.
	testwait.Until(t, "waiting queued", func() bool { return exists(filepath.Join(late.Progress(), "waiting.json")) })

	r.host.RemoveGroup("late")
	if got := r.host.Groups(); !slices.Equal(got, []string{"fam"}) {
		t.Errorf("Groups() = %v", got)
	}
	resp := response(t, late, "waiting")
	wantCode(t, resp, tools.CodeForbidden)
	if !strings.Contains(resp.Error.Message, "no longer served") {
		t.Errorf("waiting answered %q", resp.Error.Message)
	}
	close(release)
	if resp := response(t, late, "held"); !resp.OK {
		t.Errorf("held answered %+v", resp)
	}

	writeRequest(t, late.Requests(), "after", tools.ListMedia, tools.ListMediaArgs{}, time.Now())
	r.host.Rescan()
	// fam answered after that rescan was asked for; late's file stays.
	if err := r.client(t, "fam").Call(guard(t), tools.ListMedia, tools.ListMediaArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	r.stop()
	if !exists(filepath.Join(late.Requests(), "after.json")) || exists(filepath.Join(late.Responses(), "after.json")) {
		t.Error("a request written after the removal was read")
	}
	for _, c := range h.Calls() {
		if c.Group == "late" && c.ID != "held" {
			t.Errorf("late handled %+v after its removal", c)
		}
	}
	if len(r.log.matching("INFO", "no longer served", "group=late")) != 1 {
		t.Errorf("removal not logged once:\n%s", r.log)
	}
}

// Removed and added back: served again, by a fresh claim of its folder.
func TestGroupRemovedThenAddedBack(t *testing.T) {
	r := newRig(t, &funcHandler{}, ipc.HostOptions{}, "fam", "late")
	r.host.RemoveGroup("late")
	r.host.RemoveGroup("late") // twice: nothing more
	if err := r.host.AddGroup("late"); err != nil {
		t.Fatalf("added back: %v", err)
	}
	if err := r.client(t, "late").Call(guard(t), tools.ListMedia, tools.ListMediaArgs{}, nil); err != nil {
		t.Fatalf("late added back: %v", err)
	}
}

// After the host stopped, a group can no longer be added.
func TestAddGroupAfterStop(t *testing.T) {
	r := newRig(t, &funcHandler{}, ipc.HostOptions{}, "fam")
	r.stop()
	if err := r.host.AddGroup("late"); err == nil {
		t.Fatal("AddGroup on a stopped host succeeded")
	}
	r.host.RemoveGroup("fam") // harmless
}

// Groups added and removed while other groups' calls go on: no race (run
// with -race), every call of the group that stays is answered, and the
// group added last is served.
func TestGroupsChangeUnderTraffic(t *testing.T) {
	r := newRig(t, &funcHandler{}, ipc.HostOptions{}, "fam")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			if err := r.host.AddGroup("late"); err != nil {
				t.Errorf("AddGroup %d: %v", i, err)
				return
			}
			r.host.RemoveGroup("late")
			r.host.Rescan()
		}
	}()
	fam := r.client(t, "fam")
	for i := 0; i < 20; i++ {
		if err := fam.Call(guard(t), tools.ListMedia, tools.ListMediaArgs{}, nil); err != nil {
			t.Fatalf("fam call %d: %v", i, err)
		}
	}
	recv(t, "the adds and removes", done)
	if err := r.host.AddGroup("late"); err != nil {
		t.Fatal(err)
	}
	if err := r.client(t, "late").Call(guard(t), tools.ListMedia, tools.ListMediaArgs{}, nil); err != nil {
		t.Fatalf("late: %v", err)
	}
}
