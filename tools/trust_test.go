package tools_test

import (
	"testing"

	"github.com/botd-dev/botd/tools"
)

// What each call would widen, as a tainted run's guard asks it.
func TestWidens(t *testing.T) {
	own := func(id int64) bool { return id == 7 }
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{tools.ScheduleTask, map[string]any{"prompt": "x", "schedule": map[string]any{"in": "1h"}}, tools.WidenTask},
		{tools.ScheduleTask, map[string]any{"prompt": "x", "group": "main"}, tools.WidenTask},
		{tools.ScheduleTask, map[string]any{"prompt": "x", "group": "family"}, tools.WidenGroup},
		{tools.ScheduleTask, map[string]any{"prompt": "x", "group": "*"}, tools.WidenGroup},
		{tools.Remember, map[string]any{"note": "x"}, tools.WidenMemory},
		{tools.Remember, map[string]any{"note": "x", "scope": "group"}, tools.WidenMemory},
		{tools.Remember, map[string]any{"note": "x", "scope": "global"}, tools.WidenGlobal},
		{tools.Forget, map[string]any{"text": "xyz", "scope": "global"}, tools.WidenGlobal},
		{tools.PauseTask, map[string]any{"id": float64(7)}, ""},
		{tools.PauseTask, map[string]any{"id": float64(8)}, tools.WidenGroup},
		{tools.CancelTask, map[string]any{"id": float64(8)}, tools.WidenGroup},
		{tools.ResumeTask, map[string]any{"id": float64(7)}, ""},
		{tools.PauseTask, map[string]any{"id": "seven"}, ""}, // the tool refuses it itself
	} {
		s, ok := tools.Lookup(tc.tool)
		if !ok || s.Widens == nil {
			t.Fatalf("%s declares no Widens", tc.tool)
		}
		if got := s.Widens(tools.Call{Folder: "main", Args: tc.args, OwnTask: own}); got != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.tool, tc.args, got, tc.want)
		}
	}
	// Reading tools widen nothing; the tools that read strangers' words
	// say so, and fetch_url names the address it dials.
	for _, s := range tools.All {
		switch s.Name {
		case tools.ScheduleTask, tools.PauseTask, tools.ResumeTask, tools.CancelTask, tools.Remember, tools.Forget:
		default:
			if s.Widens != nil {
				t.Errorf("%s widens", s.Name)
			}
		}
		strangers := s.Name == tools.FetchURL || s.Name == tools.WebSearch || s.Name == tools.FetchMedia
		if (s.Origin == tools.OriginStrangers) != strangers {
			t.Errorf("%s: origin %v", s.Name, s.Origin)
		}
		if u, ok := s.Dialled(map[string]any{"url": "https://a.example/"}); ok != (s.Name == tools.FetchURL) || (ok && u != "https://a.example/") {
			t.Errorf("%s dials %q %v", s.Name, u, ok)
		}
	}
}
