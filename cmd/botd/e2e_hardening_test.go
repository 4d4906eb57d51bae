package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
)

// A local process plants links where botd keeps a group's files, then
// botd is started: it must refuse to run, name the path, and have written
// nothing through the link.
func TestStartRefusesPlantedFolders(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, dir string) (target string)
	}{
		{"group folder linked to another group", func(t *testing.T, dir string) string {
			return link(t, filepath.Join(dir, "groups", "work"), filepath.Join(dir, "groups", "family"))
		}},
		{"media folder linked outside", func(t *testing.T, dir string) string {
			return link(t, filepath.Join(dir, "outside"), filepath.Join(dir, "groups", "family", "media"))
		}},
		{"ipc requests linked to another group's", func(t *testing.T, dir string) string {
			return link(t, filepath.Join(dir, "data", "ipc", "work", "requests"), filepath.Join(dir, "data", "ipc", "family", "requests"))
		}},
		{"ipc failed linked outside", func(t *testing.T, dir string) string {
			return link(t, filepath.Join(dir, "outside"), filepath.Join(dir, "data", "ipc", "family", "failed"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tg := telegramtest.New(t)
			writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mediaConfig, tgToken, tg.URL()))
			target := tt.plant(t, dir)
			p := startBotd(t, dir, "run", "--config", "botd.yaml")
			select {
			case <-p.done:
			case <-time.After(60 * time.Second): // hang guard
				t.Fatalf("botd kept running with a planted link:\n%s", p.Logs())
			}
			if p.cmd.ProcessState.ExitCode() == 0 {
				t.Fatalf("botd exited 0 with a planted link:\n%s", p.Logs())
			}
			t.Logf("refusal: %s", lastLine(p.Logs()))
			if logs := p.Logs(); !strings.Contains(logs, "symlink") {
				t.Errorf("the refusal does not name the link:\n%s", logs)
			}
			if es, _ := os.ReadDir(target); len(es) != 0 {
				t.Errorf("botd wrote into the link's target %s: %v", target, es)
			}
		})
	}
}

// link makes the folder target (empty) and a symlink to it at path.
func link(t *testing.T, target, path string) string {
	t.Helper()
	for _, d := range []string{target, filepath.Dir(path)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	return target
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
