package scheduler

import (
	"time"

	"github.com/botd-dev/botd/internal/settings"
)

// Config is the scheduler section of botd's config file: the bounds of
// the scheduled tasks groups make.
type Config struct {
	// Grace is how late a run may still start: one missed by more while
	// botd was down is skipped and logged.
	Grace settings.Duration `yaml:"grace"`
	// MaxTasksPerGroup caps a group's active and paused tasks;
	// MaxRunsPerHour the task runs one group gets in any hour.
	MaxTasksPerGroup int `yaml:"max_tasks_per_group"`
	MaxRunsPerHour   int `yaml:"max_runs_per_hour"`
	// BatchPoll is the first wait before asking the provider after a batch
	// task; it doubles up to 10m.
	BatchPoll settings.Duration `yaml:"batch_poll"`
}

// DefaultConfig is the section a config file is decoded over, and the
// values New takes for zero Options.
func DefaultConfig() Config {
	return Config{Grace: settings.Duration(time.Hour), MaxTasksPerGroup: 20, MaxRunsPerHour: 30,
		BatchPoll: settings.Duration(time.Minute)}
}

// The section registers itself: package config decodes scheduler through
// Config without importing this package.
func init() {
	settings.Register("scheduler", DefaultConfig, func(c *Config, _ settings.Shared) error { return c.Validate() })
}

// Validate reports every problem of the section with its key path.
func (c Config) Validate() error {
	var ps settings.Problems
	if c.Grace < settings.Duration(time.Minute) {
		ps.Add("scheduler.grace", "must be at least 1m: a run is always a little late, and a retried delivery more")
	}
	if c.MaxTasksPerGroup < 1 || c.MaxTasksPerGroup > 1000 {
		ps.Add("scheduler.max_tasks_per_group", "must be between 1 and 1000")
	}
	if c.BatchPoll < settings.Duration(time.Second) || c.BatchPoll > settings.Duration(time.Hour) {
		ps.Add("scheduler.batch_poll", "must be between 1s and 1h")
	}
	if c.MaxRunsPerHour < 1 || c.MaxRunsPerHour > 3600 {
		ps.Add("scheduler.max_runs_per_hour", "must be between 1 and 3600")
	}
	return ps.Err()
}
