package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Kinds of schedule. "in" is a form of "at": it is stored as the absolute
// time it named when the task was made.
const (
	KindCron  = "cron"
	KindEvery = "every"
	KindAt    = "at"
	KindIn    = "in"
)

// Limits on what a schedule may ask for.
const (
	// MinEvery is the shortest interval: a chat assistant has no business
	// running more often, and a group's hourly run cap bounds the rest.
	MinEvery = time.Minute
	// Horizon is how far ahead a schedule may reach. A cron expression
	// that does not fire within it (30 February) is refused as never
	// firing; robfig/cron gives up after the same five years.
	Horizon = 5 * 365 * 24 * time.Hour
)

// Schedule is a parsed schedule: when a task runs. Expr is the canonical
// text that is stored and parsed again at start.
type Schedule struct {
	Kind string
	Expr string

	loc   *time.Location
	cron  *cron.SpecSchedule
	every time.Duration
	at    time.Time
}

// cronParser takes the five standard fields and the @daily-style
// descriptors; seconds are not a thing a chat task needs.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig/cron's mark of a field written "*" (or "?"): set in
// SpecSchedule.Hour, the schedule runs every hour rather than at fixed
// hours. The package is frozen at v3; the bit is part of its stored form.
const starBit = 1 << 63

// Parse reads a schedule of kind (cron, every, at, in) written expr, with
// times in loc, as of now. Its errors are meant for the model and the
// person behind it: what is wrong and what to write instead.
func Parse(kind, expr string, loc *time.Location, now time.Time) (Schedule, error) {
	if loc == nil {
		loc = time.Local
	}
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return Schedule{}, fmt.Errorf("%s: empty schedule", kind)
	}
	if len(expr) > 200 {
		return Schedule{}, fmt.Errorf("%s: schedule longer than 200 characters", kind)
	}
	s := Schedule{Kind: kind, loc: loc}
	switch kind {
	case KindCron:
		spec, err := parseCron(expr, loc)
		if err != nil {
			return Schedule{}, err
		}
		s.cron, s.Expr = spec, strings.Join(strings.Fields(expr), " ")
		if s.First(now).IsZero() {
			return Schedule{}, fmt.Errorf("cron %q never fires in the next five years (a date that does not exist, such as 30 February?)", s.Expr)
		}
	case KindEvery:
		d, err := time.ParseDuration(expr)
		if err != nil {
			return Schedule{}, fmt.Errorf("every: %q is not a duration (write e.g. 30m, 2h, 24h)", expr)
		}
		if d < MinEvery {
			return Schedule{}, fmt.Errorf("every: %s is too often; the shortest interval is %s", d, shortDur(MinEvery))
		}
		if d > Horizon {
			return Schedule{}, fmt.Errorf("every: %s is longer than five years", d)
		}
		d = d.Round(time.Second)
		s.every, s.Expr = d, shortDur(d)
	case KindIn:
		d, err := time.ParseDuration(expr)
		if err != nil {
			return Schedule{}, fmt.Errorf("in: %q is not a duration (write e.g. 10m, 2h, 48h)", expr)
		}
		if d < time.Second {
			return Schedule{}, fmt.Errorf("in: %s is not in the future; give at least 1s", d)
		}
		return atTime(ceilSecond(now.Add(d)), loc, now)
	case KindAt:
		t, err := parseAt(expr, loc)
		if err != nil {
			return Schedule{}, err
		}
		return atTime(t, loc, now)
	default:
		return Schedule{}, fmt.Errorf("unknown schedule kind %q: use cron, every, at or in", kind)
	}
	return s, nil
}

func atTime(t time.Time, loc *time.Location, now time.Time) (Schedule, error) {
	t = t.In(loc)
	if !t.After(now) {
		return Schedule{}, fmt.Errorf("at: %s is in the past (it is now %s)", t.Format(time.RFC3339), now.In(loc).Format(time.RFC3339))
	}
	if t.Sub(now) > Horizon {
		return Schedule{}, fmt.Errorf("at: %s is more than five years ahead", t.Format(time.RFC3339))
	}
	return Schedule{Kind: KindAt, Expr: t.Format(time.RFC3339), loc: loc, at: t}, nil
}

// atLayouts are the forms of at: RFC 3339, and the same without an offset
// (then in the configured timezone), which models often write.
var atLayouts = []string{time.RFC3339, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

func parseAt(expr string, loc *time.Location) (time.Time, error) {
	for _, l := range atLayouts {
		if t, err := time.ParseInLocation(l, expr, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("at: %q is not a time; write RFC 3339 such as 2026-12-01T09:00:00+01:00 (without the offset it is taken in %s)", expr, loc)
}

// parseCron parses a five-field expression or a descriptor. A timezone
// prefix is refused: every task runs in the configured timezone, and
// robfig/cron panics on some malformed prefixes. Any other panic of the
// parser on hostile input becomes an error too.
func parseCron(expr string, loc *time.Location) (spec *cron.SpecSchedule, err error) {
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("cron %q: a timezone prefix is not allowed; tasks run in %s", expr, loc)
	}
	if strings.HasPrefix(expr, "@every") {
		return nil, fmt.Errorf("cron %q: use the every schedule for intervals, e.g. {\"every\": \"30m\"}", expr)
	}
	defer func() {
		if p := recover(); p != nil {
			spec, err = nil, fmt.Errorf("cron %q: malformed expression", expr)
		}
	}()
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %v (write five fields: minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1\" for Mondays at 9:00)", expr, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron %q: not a calendar schedule", expr)
	}
	spec.Location = loc
	return spec, nil
}

// errNoSchedule is what Load says of a stored row it cannot read.
var errNoSchedule = errors.New("stored schedule unreadable")

// Load parses a stored schedule again. Unlike Parse it accepts an at in
// the past (the task may be due) and needs no clock.
func Load(kind, expr string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.Local
	}
	s := Schedule{Kind: kind, Expr: expr, loc: loc}
	switch kind {
	case KindCron:
		spec, err := parseCron(expr, loc)
		if err != nil {
			return Schedule{}, fmt.Errorf("%w: %v", errNoSchedule, err)
		}
		s.cron = spec
	case KindEvery:
		d, err := time.ParseDuration(expr)
		if err != nil || d < MinEvery {
			return Schedule{}, fmt.Errorf("%w: every %q", errNoSchedule, expr)
		}
		s.every = d
	case KindAt:
		t, err := time.Parse(time.RFC3339, expr)
		if err != nil {
			return Schedule{}, fmt.Errorf("%w: at %q", errNoSchedule, expr)
		}
		s.at = t.In(loc)
	default:
		return Schedule{}, fmt.Errorf("%w: kind %q", errNoSchedule, kind)
	}
	return s, nil
}

// Once reports whether the schedule fires a single time.
func (s Schedule) Once() bool { return s.Kind == KindAt }

// First is the first run of a task made at now; zero if it never runs.
func (s Schedule) First(now time.Time) time.Time {
	switch s.Kind {
	case KindCron:
		return s.cronNext(now)
	case KindEvery:
		return ceilSecond(now).Add(s.every)
	case KindAt:
		return s.at
	}
	return time.Time{}
}

// Next is the first run after the one due at due that is also after now,
// so a run missed while botd was down is not made up for more than once;
// zero when there is none (a one-shot, or a cron that stopped firing).
// An every schedule keeps its phase: every 30m from 10:00 stays on :00
// and :30 however long botd was stopped.
func (s Schedule) Next(due, now time.Time) time.Time {
	after := due
	if now.After(after) {
		after = now
	}
	switch s.Kind {
	case KindCron:
		return s.cronNext(after)
	case KindEvery:
		n := after.Sub(due)/s.every + 1
		return due.Add(n * s.every)
	}
	return time.Time{}
}

// cronNext is the first time after t the expression matches, in the
// schedule's timezone. robfig/cron steps through absolute hours, which is
// right for expressions that run every hour ("0 * * * *" runs at each
// hour the clock shows, 03:00 straight after 01:00 when summer time
// begins). For one at fixed hours it is wrong twice a year: a time in the
// hour that is skipped never comes (daily at 02:30 would not run that
// day), and a time in the hour that repeats comes twice. So fixed-hour
// expressions are matched against the wall clock, as cron daemons do:
// such a time runs once, a skipped one at the moment the clock jumps.
func (s Schedule) cronNext(t time.Time) time.Time {
	if s.cron.Hour&starBit != 0 {
		return s.cron.Next(t)
	}
	wallSpec := *s.cron
	wallSpec.Location = time.UTC
	w := wallClock(t, s.loc)
	for range 4 { // a repeated wall time is passed over at most once
		w = wallSpec.Next(w)
		if w.IsZero() {
			return time.Time{}
		}
		if at := instant(w, s.loc); at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// ceilSecond rounds t up to a whole second: stored times are whole
// seconds, and "in 3s" must never run early.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

// wallClock is what a clock in loc shows at t, as a time in UTC.
func wallClock(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// instant is the first moment a clock in loc shows the wall time w (w's
// fields read in UTC). A wall time that repeats gives its first
// occurrence; one that does not exist (skipped when summer time begins)
// gives the moment the clock jumps past it.
func instant(w time.Time, loc *time.Location) time.Time {
	var cands []time.Time
	for _, probe := range []time.Time{w.Add(-24 * time.Hour), w.Add(24 * time.Hour)} {
		_, off := probe.In(loc).Zone()
		cands = append(cands, w.Add(-time.Duration(off)*time.Second))
	}
	var best time.Time
	for _, c := range cands {
		if wallClock(c, loc).Equal(w) && (best.IsZero() || c.Before(best)) {
			best = c
		}
	}
	if !best.IsZero() {
		return best
	}
	// A gap: between the two candidates the clock jumps over w. Find the
	// first second it shows a later time.
	lo, hi := cands[0], cands[1]
	if hi.Before(lo) {
		lo, hi = hi, lo
	}
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if wallClock(mid, loc).Before(w) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// Describe says when the schedule runs, for list_tasks and logs.
func (s Schedule) Describe() string {
	switch s.Kind {
	case KindCron:
		return fmt.Sprintf("cron %q (%s)", s.Expr, zoneName(s.loc))
	case KindEvery:
		return "every " + s.Expr
	case KindAt:
		return "once at " + FormatTime(s.at, s.loc)
	}
	return s.Kind + " " + s.Expr
}

// FormatTime is how times are shown to the model and in logs: local to
// the configured zone, with its offset, so nothing is left to guess.
func FormatTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "never"
	}
	if loc == nil {
		loc = time.Local
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST (-07:00)")
}

func zoneName(loc *time.Location) string {
	if loc == nil || loc == time.Local {
		return "the system's timezone"
	}
	return loc.String()
}

// shortDur writes 30m rather than 30m0s.
func shortDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
