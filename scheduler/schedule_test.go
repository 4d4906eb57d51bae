package scheduler

import (
	"strings"
	"testing"
	"time"
)

func berlin(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no tz database: %v", err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// runs lists the first n runs of s for a task made at created, each next
// one computed the way the scheduler does after a run on time.
func runs(s Schedule, created time.Time, n int) []string {
	var out []string
	t := s.First(created)
	for i := 0; i < n && !t.IsZero(); i++ {
		out = append(out, t.UTC().Format(time.RFC3339))
		t = s.Next(t, t)
	}
	return out
}

func TestScheduleFiresAtTheRightTimes(t *testing.T) {
	loc := berlin(t)
	tests := []struct {
		name, kind, expr string
		created          string // UTC
		want             []string
	}{
		{"cron weekly, Monday 9:00 local across the spring change", KindCron, "0 9 * * 1", "2026-03-20T12:00:00Z",
			[]string{"2026-03-23T08:00:00Z", "2026-03-30T07:00:00Z", "2026-04-06T07:00:00Z"}},
		{"cron daily 02:30: the skipped hour runs when the clock jumps (29 March)", KindCron, "30 2 * * *", "2026-03-27T12:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"cron daily 02:30: the repeated hour runs once (25 October)", KindCron, "30 2 * * *", "2026-10-23T12:00:00Z",
			[]string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"cron every half hour in the 2 o'clock hour, repeated hour once", KindCron, "*/30 2 * * *", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:00:00Z"}},
		{"cron hourly runs by the hour across the spring gap", KindCron, "0 * * * *", "2026-03-28T23:30:00Z",
			[]string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"cron hourly runs both 02:00 in October", KindCron, "0 * * * *", "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		{"cron first of the month, rent", KindCron, "0 10 1 * *", "2026-01-15T00:00:00Z",
			[]string{"2026-02-01T09:00:00Z", "2026-03-01T09:00:00Z", "2026-04-01T08:00:00Z"}},
		{"cron descriptor @daily", KindCron, "@daily", "2026-03-28T12:00:00Z",
			[]string{"2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"}},
		{"every 30m keeps its phase", KindEvery, "30m", "2026-05-01T10:00:07Z",
			[]string{"2026-05-01T10:30:07Z", "2026-05-01T11:00:07Z", "2026-05-01T11:30:07Z"}},
		{"every 24h is absolute time (use cron for a wall-clock time)", KindEvery, "24h", "2026-03-28T08:00:00Z",
			[]string{"2026-03-29T08:00:00Z", "2026-03-30T08:00:00Z"}},
		{"every at the minimum", KindEvery, "1m", "2026-05-01T10:00:00Z",
			[]string{"2026-05-01T10:01:00Z", "2026-05-01T10:02:00Z"}},
		{"at with offset runs once", KindAt, "2026-12-01T09:00:00+01:00", "2026-11-01T00:00:00Z",
			[]string{"2026-12-01T08:00:00Z"}},
		{"at without offset is in the configured zone (summer time)", KindAt, "2026-07-01T09:00", "2026-06-01T00:00:00Z",
			[]string{"2026-07-01T07:00:00Z"}},
		{"at without offset is in the configured zone (winter time)", KindAt, "2026-12-01 09:00", "2026-06-01T00:00:00Z",
			[]string{"2026-12-01T08:00:00Z"}},
		{"in is from now", KindIn, "2h", "2026-05-01T10:00:00Z",
			[]string{"2026-05-01T12:00:00Z"}},
		{"in 3s", KindIn, "3s", "2026-05-01T10:00:00Z",
			[]string{"2026-05-01T10:00:03Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := utc(tt.created)
			s, err := Parse(tt.kind, tt.expr, loc, now)
			if err != nil {
				t.Fatal(err)
			}
			got := runs(s, now, len(tt.want)+1)
			if s.Once() && len(got) != 1 {
				t.Fatalf("a one-shot ran %d times: %v", len(got), got)
			}
			if len(got) > len(tt.want) {
				got = got[:len(tt.want)]
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("runs\n got %v\nwant %v", got, tt.want)
			}
			// What is stored parses back to the same schedule.
			back, err := Load(s.Kind, s.Expr, loc)
			if err != nil {
				t.Fatalf("Load(%q, %q): %v", s.Kind, s.Expr, err)
			}
			if got2 := runs(back, now, len(tt.want)); s.Kind != KindEvery && strings.Join(got2, " ") != strings.Join(tt.want, " ") {
				t.Errorf("after Load runs %v, want %v", got2, tt.want)
			}
		})
	}
}

// Next after downtime: the first run after now, never a backlog.
func TestScheduleNextSkipsWhatWasMissed(t *testing.T) {
	loc := berlin(t)
	now := utc("2026-05-01T13:10:00Z")
	every, _ := Parse(KindEvery, "30m", loc, utc("2026-05-01T10:00:00Z"))
	if got := every.Next(utc("2026-05-01T10:30:00Z"), now); !got.Equal(utc("2026-05-01T13:30:00Z")) {
		t.Errorf("every after downtime: %v", got)
	}
	cr, _ := Parse(KindCron, "0 9 * * *", loc, now)
	if got := cr.Next(utc("2026-04-28T07:00:00Z"), now); !got.Equal(utc("2026-05-02T07:00:00Z")) {
		t.Errorf("cron after downtime: %v", got)
	}
	at, _ := Parse(KindAt, "2026-05-02T00:00:00Z", loc, now)
	if got := at.Next(at.First(now), now); !got.IsZero() {
		t.Errorf("a one-shot has a next run: %v", got)
	}
}

func TestScheduleRefusesHostileInput(t *testing.T) {
	loc := berlin(t)
	now := utc("2026-05-01T10:00:00Z")
	tests := []struct {
		kind, expr, want string
	}{
		{KindCron, "", "empty"},
		{KindCron, "every monday", "five fields"},
		{KindCron, "* * * * * *", "five fields"},
		{KindCron, "61 * * * *", "above maximum"},
		{KindCron, "0 0 30 2 *", "never fires"},
		{KindCron, "0 0 31 4 *", "never fires"},
		{KindCron, "TZ=Europe/Berlin", "timezone prefix"},
		{KindCron, "CRON_TZ=UTC 0 9 * * *", "timezone prefix"},
		{KindCron, "@every 1s", "every schedule"},
		{KindCron, "@reboot", "malformed"},
		{KindCron, "0-", "five fields"},
		{KindCron, strings.Repeat("1,", 200) + "1 * * * *", "longer than 200"},
		{KindEvery, "30s", "too often"},
		{KindEvery, "0s", "too often"},
		{KindEvery, "-5m", "too often"},
		{KindEvery, "soon", "not a duration"},
		{KindEvery, "100000h", "five years"},
		{KindAt, "2026-04-30T09:00:00+02:00", "in the past"},
		{KindAt, "next tuesday", "not a time"},
		{KindAt, "2040-01-01T00:00:00Z", "five years"},
		{KindIn, "-1h", "not in the future"},
		{KindIn, "0s", "not in the future"},
		{KindIn, "later", "not a duration"},
		{"weekly", "1", "unknown schedule kind"},
	}
	for _, tt := range tests {
		t.Run(tt.kind+" "+tt.expr, func(t *testing.T) {
			_, err := Parse(tt.kind, tt.expr, loc, now)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) && !(tt.want == "malformed" && strings.Contains(err.Error(), "cron")) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0 9 * * 1", "*/5 * * * *", "TZ=", "CRON_TZ=X", "@daily", "0-5/0 * * * *", "1-0 * * * *", "* * * * 7", "0 0 L * *", "?"} {
		f.Add(KindCron, s)
	}
	f.Add(KindEvery, "1m")
	f.Add(KindAt, "2026-01-01T00:00:00Z")
	f.Add(KindIn, "9223372036s")
	loc := time.UTC
	now := utc("2026-05-01T10:00:00Z")
	f.Fuzz(func(t *testing.T, kind, expr string) {
		s, err := Parse(kind, expr, loc, now)
		if err != nil {
			return
		}
		first := s.First(now)
		if first.IsZero() || !first.After(now) {
			t.Fatalf("%s %q accepted with first run %v", kind, expr, first)
		}
		if next := s.Next(first, first); !next.IsZero() && !next.After(first) {
			t.Fatalf("%s %q: next %v not after %v", kind, expr, next, first)
		}
		if s.Kind == KindEvery && s.every < MinEvery {
			t.Fatalf("every %q under the minimum", expr)
		}
	})
}

// Stored times are whole seconds; rounding never makes a run early.
func TestScheduleNeverEarly(t *testing.T) {
	now := utc("2026-05-01T10:00:00Z").Add(168 * time.Millisecond)
	for _, tt := range []struct{ kind, expr string }{{KindIn, "3s"}, {KindEvery, "1m"}} {
		s, err := Parse(tt.kind, tt.expr, time.UTC, now)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := time.ParseDuration(tt.expr)
		if first := s.First(now); first.Before(now.Add(d)) || first.Sub(now.Add(d)) >= time.Second || first.Nanosecond() != 0 {
			t.Errorf("%s %s from %v: first run %v", tt.kind, tt.expr, now, first)
		}
	}
}
