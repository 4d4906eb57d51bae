package main

import (
	"runtime/debug"
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
