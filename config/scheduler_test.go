package config

import (
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/scheduler"
)

func TestSchedulerSettings(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown timezone", `timezone: Europe/Atlantis`, `timezone: unknown timezone "Europe/Atlantis"`},
		{"path as timezone", `timezone: ../../etc/passwd`, `timezone: unknown timezone`},
		{"negative grace", `scheduler: {grace: -1m}`, `scheduler.grace: must not be negative`},
		{"no grace", `scheduler: {grace: 0s}`, `scheduler.grace: must be at least 1m`},
		{"no tasks", `scheduler: {max_tasks_per_group: 0}`, `scheduler.max_tasks_per_group: must be between 1 and 1000`},
		{"too many runs", `scheduler: {max_runs_per_hour: 100000}`, `scheduler.max_runs_per_hour: must be between 1 and 3600`},
		{"typo", `scheduler: {max_task_per_group: 3}`, `scheduler.max_task_per_group`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), noEnv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}

	cfg, err := Parse([]byte("timezone: Europe/Berlin\nscheduler: {grace: 30m, max_tasks_per_group: 5, max_runs_per_hour: 10}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Location().String() != "Europe/Berlin" || Section[scheduler.Config](cfg).Grace.D() != 30*time.Minute ||
		Section[scheduler.Config](cfg).MaxTasksPerGroup != 5 || Section[scheduler.Config](cfg).MaxRunsPerHour != 10 {
		t.Errorf("parsed %+v %v", Section[scheduler.Config](cfg), cfg.Location())
	}
	def, err := Parse(nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if def.Location() != time.Local || Section[scheduler.Config](def).Grace.D() != time.Hour || Section[scheduler.Config](def).MaxTasksPerGroup != 20 ||
		Section[scheduler.Config](def).MaxRunsPerHour != 30 {
		t.Errorf("defaults %+v %v", Section[scheduler.Config](def), def.Location())
	}
}
