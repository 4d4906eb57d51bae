package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// A local process plants links where botd keeps one group's files, then
// botd is started: that group is disabled, with the path in the log, and
// nothing is written through the link; every other group is answered.
func TestStartRefusesPlantedFolders(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, dir string) (target string)
		// work: the target is the work group's own folder, which work
		// itself fills; family must have written nothing there.
		work bool
	}{
		{"group folder linked to another group", func(t *testing.T, dir string) string {
			return link(t, filepath.Join(dir, "groups", "work"), filepath.Join(dir, "groups", "family"))
		}, true},
		{"media folder linked outside", func(t *testing.T, dir string) string {
			return link(t, filepath.Join(dir, "outside"), filepath.Join(dir, "groups", "family", "media"))
		}, false},
		{"ipc requests linked to another group's", func(t *testing.T, dir string) string {
			return link(t, filepath.Join(dir, "data", "ipc", "work", "requests"), filepath.Join(dir, "data", "ipc", "family", "requests"))
		}, false},
		{"ipc failed linked outside", func(t *testing.T, dir string) string {
			return link(t, filepath.Join(dir, "outside"), filepath.Join(dir, "data", "ipc", "family", "failed"))
		}, false},
	}
	const answer = "Hello from Andy."
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tg := telegramtest.New(t)
			model := newFakeModel(t, "openai", answer)
			writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(agentConfig, telegramtest.Token, tg.URL(), "openai", model.srv.URL+"/v1", "gpt-4.1")+
				`  - {folder: work, name: Work, chat: "telegram:-200", requires_trigger: true}`+"\n")
			target := tt.plant(t, dir)
			p := startBotd(t, dir, "run", "--config", "botd.yaml")
			p.waitLog(t, "botd running")
			logs := p.Logs()
			if !strings.Contains(logs, "group disabled") || !strings.Contains(logs, "group=family") || !strings.Contains(logs, "symlink") {
				t.Fatalf("the log does not say family is disabled and why:\n%s", logs)
			}
			t.Logf("reason: %s", lineWith(logs, "group disabled"))

			tg.Enqueue(telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), 10, "@Andy are you there?"))
			tg.Enqueue(telegramtest.Text(telegramtest.Group(-200, "Work"), telegramtest.Person(43, "Bob"), 11, "@Andy are you there?"))
			testwait.Within(t, 60*time.Second, "the answer in chat -200", func() bool {
				for _, s := range tg.Sent() {
					if strings.Contains(s.String(), answer) && strings.Contains(s.String(), "-200") {
						return true
					}
				}
				return false
			})
			testwait.Within(t, 30*time.Second, "tg.Pending() == 0", func() bool { return tg.Pending() == 0 })
			for _, s := range tg.Sent() {
				if strings.Contains(s.String(), "-100") {
					t.Errorf("the disabled group was answered: %v", s)
				}
			}
			es, _ := os.ReadDir(target)
			if tt.work {
				mem, _ := os.ReadFile(filepath.Join(target, "MEMORY.md"))
				if strings.Contains(string(mem), "Family") {
					t.Errorf("family's memory file was written through the link into %s", target)
				}
			} else if len(es) != 0 {
				t.Errorf("botd wrote into the link's target %s: %v", target, es)
			}
			p.stop(t)
		})
	}
}

func lineWith(s, substr string) string {
	for l := range strings.Lines(s) {
		if strings.Contains(l, substr) {
			return strings.TrimSpace(l)
		}
	}
	return ""
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
