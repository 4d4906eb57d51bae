package config

import "time"

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

// timezoneProblems checks timezone, which the scheduler and the agent's
// prompt share.
func (c *Config) timezoneProblems() Problems {
	var ps Problems
	if c.Timezone != "" {
		if _, err := time.LoadLocation(c.Timezone); err != nil {
			ps.Add("timezone", "unknown timezone %s (write an IANA name such as Europe/Berlin or UTC; empty is the system's)", quote(c.Timezone))
		}
	}
	return ps
}

func quote(s string) string { return `"` + s + `"` }
