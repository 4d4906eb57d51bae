package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time: the Makefile passes
//
//	-X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
//
// A build without them (go install, go build) falls back on what the Go
// toolchain recorded about the module and the VCS checkout.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// buildStamp is what botd says it is: version, commit and build date,
// each "unknown" when neither the linker flags nor the build info name it.
type buildStamp struct {
	Version, Commit, Date string
	Modified              bool
}

func currentBuild() buildStamp {
	info, _ := debug.ReadBuildInfo()
	return stampFrom(version, commit, date, info)
}

// stampFrom prefers the linker's values and fills the gaps from the build
// info: the module version (go install botd@v1.2.3) and vcs.revision,
// vcs.time and vcs.modified (a build inside a checkout with -buildvcs).
func stampFrom(version, commit, date string, info *debug.BuildInfo) buildStamp {
	s := buildStamp{Version: version, Commit: commit, Date: date}
	if info != nil {
		if (s.Version == "" || s.Version == "dev") && info.Main.Version != "" && info.Main.Version != "(devel)" {
			s.Version = info.Main.Version
		}
		for _, kv := range info.Settings {
			switch kv.Key {
			case "vcs.revision":
				if s.Commit == "" {
					s.Commit = kv.Value
				}
			case "vcs.time":
				if s.Date == "" {
					s.Date = kv.Value
				}
			case "vcs.modified":
				s.Modified = s.Modified || kv.Value == "true"
			}
		}
	}
	if s.Version == "" {
		s.Version = "dev"
	}
	if len(s.Commit) > 12 {
		s.Commit = s.Commit[:12]
	}
	if s.Commit == "" {
		s.Commit = "unknown"
	} else if s.Modified {
		s.Commit += "-dirty"
	}
	if s.Date == "" {
		s.Date = "unknown"
	}
	return s
}

func (s buildStamp) String() string {
	return fmt.Sprintf("botd %s (commit %s, built %s, %s %s/%s)", s.Version, s.Commit, s.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
