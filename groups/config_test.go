package groups

import (
	"strings"
	"testing"

	"github.com/botd-dev/botd/internal/settings"
)

func TestValidateList(t *testing.T) {
	tests := []struct {
		name string
		list []Config
		want []string // every problem, "path: start of message"
	}{
		{"valid", []Config{{Folder: "family", Chat: "telegram:-1"}, {Folder: "work", Chat: "slack:C1", Main: true}}, nil},
		{"duplicate folder and chat", []Config{{Folder: "a", Chat: "telegram:-1"}, {Folder: "a", Chat: "telegram:-1"}},
			[]string{`groups[1].folder: "a" is already used by groups[0]`, `groups[1].chat: "telegram:-1" is already registered by groups[0]`}},
		{"network rule", []Config{{Folder: "a", Chat: "web:bad"}},
			[]string{"groups[0].chat: bad room"}},
		{"two mains and a spaced trigger", []Config{{Folder: "a", Chat: "telegram:-1", Main: true}, {Folder: "b", Chat: "telegram:-2", Main: true, Trigger: " @x"}},
			[]string{"groups[1].trigger: must not start or end with spaces", "groups[1].main: only one group may be the main group"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			folders := map[string]int{}
			ps := settings.Of(ValidateList(tt.list, folders))
			if len(ps) != len(tt.want) {
				t.Fatalf("problems = %v, want %v", ps, tt.want)
			}
			for i, p := range ps {
				if !strings.HasPrefix(p.String(), tt.want[i]) {
					t.Errorf("problem %d = %q, want it to start with %q", i, p, tt.want[i])
				}
			}
			if _, ok := folders[tt.list[0].Folder]; !ok {
				t.Errorf("folders = %v, does not hold %q", folders, tt.list[0].Folder)
			}
		})
	}
}
