package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestStampFrom(t *testing.T) {
	vcs := &debug.BuildInfo{
		Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "false"},
		},
	}
	dirty := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
	}}
	installed := &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		info                  *debug.BuildInfo
		want                  buildStamp
	}{
		{"linker flags win", "1.2.3", "deadbeef", "2026-11-28T00:00:00Z", vcs,
			buildStamp{Version: "1.2.3", Commit: "deadbeef", Date: "2026-11-28T00:00:00Z"}},
		{"vcs fills the gaps", "dev", "", "", vcs,
			buildStamp{Version: "dev", Commit: "0123456789ab", Date: "2026-11-01T10:00:00Z"}},
		{"dirty checkout says so", "dev", "", "", dirty,
			buildStamp{Version: "dev", Commit: "abc-dirty", Date: "unknown", Modified: true}},
		{"go install names the module version", "dev", "", "", installed,
			buildStamp{Version: "v1.4.0", Commit: "unknown", Date: "unknown"}},
		{"nothing known", "", "", "", nil,
			buildStamp{Version: "dev", Commit: "unknown", Date: "unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stampFrom(tc.version, tc.commit, tc.date, tc.info); got != tc.want {
				t.Fatalf("stampFrom = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The Makefile's flags reach the binary: what `botd version` prints names
// the version, commit and date it was given.
func TestVersionLinkerFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds botd")
	}
	bin := filepath.Join(t.TempDir(), "botd")
	ldflags := "-X main.version=9.8.7 -X main.commit=feedface -X main.date=2026-11-28T12:00:00Z"
	cmd := exec.Command("go", "build", "-tags", "goolm", "-ldflags", ldflags, "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(context.Background(), bin, "version").Output()
	if err != nil {
		t.Fatalf("botd version: %v", err)
	}
	line := string(bytes.TrimSpace(out))
	for _, want := range []string{"botd 9.8.7 ", "commit feedface", "built 2026-11-28T12:00:00Z"} {
		if !strings.Contains(line, want) {
			t.Errorf("botd version = %q, missing %q", line, want)
		}
	}
}
