package config

import (
	"time"

	"github.com/botd-dev/botd/scheduler"
)

// Scheduler bounds the scheduled tasks groups make (package scheduler).
type Scheduler struct {
	// Grace is how late a run may still start: one missed by more while
	// botd was down is skipped and logged.
	Grace Duration `yaml:"grace"`
	// MaxTasksPerGroup caps a group's active and paused tasks;
	// MaxRunsPerHour the task runs one group gets in any hour.
	MaxTasksPerGroup int `yaml:"max_tasks_per_group"`
	MaxRunsPerHour   int `yaml:"max_runs_per_hour"`
	// BatchPoll is the first wait before asking the provider after a batch
	// task; it doubles up to 10m.
	BatchPoll Duration `yaml:"batch_poll"`
}

func defaultScheduler() Scheduler {
	return Scheduler{Grace: Duration(scheduler.DefaultGrace), MaxTasksPerGroup: scheduler.DefaultMaxTasksPerGroup,
		MaxRunsPerHour: scheduler.DefaultMaxRunsPerHour, BatchPoll: Duration(time.Minute)}
}

// Location is the timezone of scheduled tasks and of the times the agent
// shows: timezone, or the system's when it is empty. Validate has
// checked the name.
func (c *Config) Location() *time.Location {
	if c.Timezone == "" {
		return time.Local
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		return time.Local
	}
	return loc
}

func (c *Config) schedulerProblems() Problems {
	var ps Problems
	if c.Timezone != "" {
		if _, err := time.LoadLocation(c.Timezone); err != nil {
			ps = append(ps, Problem{"timezone", "unknown timezone " + quote(c.Timezone) + " (write an IANA name such as Europe/Berlin or UTC; empty is the system's)"})
		}
	}
	s := c.Scheduler
	if s.Grace < Duration(time.Minute) {
		ps = append(ps, Problem{"scheduler.grace", "must be at least 1m: a run is always a little late, and a retried delivery more"})
	}
	if s.MaxTasksPerGroup < 1 || s.MaxTasksPerGroup > 1000 {
		ps = append(ps, Problem{"scheduler.max_tasks_per_group", "must be between 1 and 1000"})
	}
	if s.BatchPoll < Duration(time.Second) || s.BatchPoll > Duration(time.Hour) {
		ps = append(ps, Problem{"scheduler.batch_poll", "must be between 1s and 1h"})
	}
	if s.MaxRunsPerHour < 1 || s.MaxRunsPerHour > 3600 {
		ps = append(ps, Problem{"scheduler.max_runs_per_hour", "must be between 1 and 3600"})
	}
	return ps
}

func quote(s string) string { return `"` + s + `"` }
