package scheduler

import (
	"context"
	"errors"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store/storetest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Each form fires at its times through the spring DST change, driven by
// a clock the test moves: cron in Europe/Berlin (weekly, and daily at
// 02:30, which does not exist on 29 March and runs at 03:00), every,
// at and in.
func TestTasksFireAtTheirTimes(t *testing.T) { storetest.EachDialect(t, testTasksFireAtTheirTimes) }

func testTasksFireAtTheirTimes(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-03-20T12:00:00Z"), nil)
	weekly := r.schedule("family", KindCron, "0 9 * * 1")
	nightly := r.schedule("family", KindCron, "30 2 * * *")
	every := r.schedule("work", KindEvery, "6h")
	at := r.schedule("main", KindAt, "2026-03-25T10:00:00+01:00")
	in := r.schedule("main", KindIn, "2h")
	r.until(utc("2026-03-31T00:00:00Z"))

	check := func(name string, id int64, want ...string) {
		t.Helper()
		if got := r.agent.dues(id); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s fired\n got %v\nwant %v", name, got, want)
		}
	}
	check("weekly", weekly.ID, "2026-03-23T08:00:00Z", "2026-03-30T07:00:00Z")
	check("nightly", nightly.ID, "2026-03-21T01:30:00Z", "2026-03-22T01:30:00Z", "2026-03-23T01:30:00Z", "2026-03-24T01:30:00Z",
		"2026-03-25T01:30:00Z", "2026-03-26T01:30:00Z", "2026-03-27T01:30:00Z", "2026-03-28T01:30:00Z",
		"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z")
	check("at", at.ID, "2026-03-25T09:00:00Z")
	check("in", in.ID, "2026-03-20T14:00:00Z")
	if got := r.agent.dues(every.ID); len(got) != 42 || got[0] != "2026-03-20T18:00:00Z" || got[41] != "2026-03-31T00:00:00Z" {
		t.Errorf("every 6h fired %d times: %v", len(got), got)
	}
	for _, id := range []int64{at.ID, in.ID} {
		if st := r.task(id).State; st != StateDone {
			t.Errorf("one-shot %d is %s after its run", id, st)
		}
	}
	// Each run is a message in its group's chat, with an id of the run.
	for _, f := range r.agent.fires {
		want := map[string]string{"family": famChat, "work": workChat, "main": mainChat}[f.Folder]
		if f.Chat != want || f.MessageID != MessageID(f.TaskID, f.Due) {
			t.Errorf("run %+v", f)
		}
	}
}

// The autumn change: a daily 02:30 runs once on 25 October, an hourly
// task runs in both 02:00 hours.
func TestTasksFireAcrossTheAutumnChange(t *testing.T) {
	storetest.EachDialect(t, testTasksFireAcrossTheAutumnChange)
}

func testTasksFireAcrossTheAutumnChange(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-10-24T12:00:00Z"), nil)
	nightly := r.schedule("family", KindCron, "30 2 * * *")
	hourly := r.schedule("work", KindCron, "0 * * * *")
	r.until(utc("2026-10-25T03:30:00Z"))
	if got := r.agent.dues(nightly.ID); strings.Join(got, " ") != "2026-10-25T00:30:00Z" {
		t.Errorf("02:30 ran at %v, want once at 00:30 UTC (02:30 CEST)", got)
	}
	got := r.agent.dues(hourly.ID)
	want := "2026-10-24T23:00:00Z 2026-10-25T00:00:00Z 2026-10-25T01:00:00Z 2026-10-25T02:00:00Z 2026-10-25T03:00:00Z"
	if strings.Join(got[len(got)-5:], " ") != want {
		t.Errorf("hourly ran at %v", got)
	}
}

func TestPauseResumeCancel(t *testing.T) { storetest.EachDialect(t, testPauseResumeCancel) }

func testPauseResumeCancel(t *testing.T, d sqldialect.Dialect) {
	ctx := context.Background()
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), nil)
	task := r.schedule("family", KindEvery, "30m")
	r.until(utc("2026-05-01T11:00:00Z")) // 10:30, 11:00
	if _, err := r.s.Pause(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	r.until(utc("2026-05-01T13:10:00Z"))
	if n := len(r.agent.dues(task.ID)); n != 2 {
		t.Fatalf("%d runs, want 2 (none while paused)", n)
	}
	got, err := r.s.Resume(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	// No making up for the pause: the next run is the next on the phase.
	if !got.NextRun.Equal(utc("2026-05-01T13:30:00Z")) || got.State != StateActive {
		t.Errorf("resumed: %s next %v", got.State, got.NextRun)
	}
	r.until(utc("2026-05-01T14:00:00Z"))
	if got := r.agent.dues(task.ID); strings.Join(got[2:], " ") != "2026-05-01T13:30:00Z 2026-05-01T14:00:00Z" {
		t.Errorf("after resume ran at %v", got)
	}
	if _, err := r.s.Cancel(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	r.until(utc("2026-05-02T00:00:00Z"))
	if n := len(r.agent.dues(task.ID)); n != 4 {
		t.Errorf("%d runs, want 4 (none after cancel)", n)
	}
	for _, op := range []func(context.Context, int64) (Task, error){r.s.Pause, r.s.Resume} {
		if _, err := op(ctx, task.ID); !errors.Is(err, ErrState) {
			t.Errorf("changing a cancelled task: %v", err)
		}
	}
	// Twice the same change is the same answer.
	other := r.schedule("family", KindEvery, "1h")
	for range 2 {
		if got, err := r.s.Pause(ctx, other.ID); err != nil || got.State != StatePaused {
			t.Fatalf("pause twice: %v %v", got.State, err)
		}
	}
	// A one-shot whose time passed while paused is not resumed.
	once := r.schedule("family", KindIn, "1h")
	r.s.Pause(ctx, once.ID)
	r.clock.Advance(2 * time.Hour)
	if _, err := r.s.Resume(ctx, once.ID); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "while it was paused") {
		t.Errorf("resuming a passed one-shot: %v", err)
	}
}

// What fell due while botd was down runs once at start if it is within
// the grace, and is skipped (logged, counted, visible) if older. Either
// way the task moves on to its next time after now: no backlog.
func TestMissedRunsFollowTheGrace(t *testing.T) {
	storetest.EachDialect(t, testMissedRunsFollowTheGrace)
}

func testMissedRunsFollowTheGrace(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T08:00:00Z"), func(o *Options) { o.Grace = time.Hour })
	recent := r.schedule("family", KindEvery, "30m")        // due 08:30, 09:00, 09:30 ...
	daily := r.schedule("family", KindCron, "0 7 * * *")    // 07:00 CEST = 05:00 UTC
	soon := r.schedule("work", KindAt, "2026-05-01T11:15Z") // missed by 35m
	old := r.schedule("work", KindAt, "2026-05-01T09:00Z")  // missed by 2h50
	// botd stops at 08:00 and starts again at 11:50.
	r.clock.Set(utc("2026-05-01T11:50:00Z"))
	r.restart()
	r.runDue()

	check := func(name string, id int64, fired []string, skipped int, next string, why string) {
		t.Helper()
		task := r.task(id)
		if got := r.agent.dues(id); strings.Join(got, " ") != strings.Join(fired, " ") {
			t.Errorf("%s fired %v, want %v", name, got, fired)
		}
		if task.Skipped != skipped {
			t.Errorf("%s skipped %d, want %d", name, task.Skipped, skipped)
		}
		if n := task.NextRun; (next == "" && !n.IsZero()) || (next != "" && !n.Equal(utc(next))) {
			t.Errorf("%s next run %v, want %s", name, n, next)
		}
		if !strings.Contains(task.LastError, why) {
			t.Errorf("%s last error %q, want %q", name, task.LastError, why)
		}
	}
	// every 30m: next_run 08:30 was missed by 3h20 → skipped, moved to 12:00.
	check("every", recent.ID, nil, 1, "2026-05-01T12:00:00Z", "more than the grace of 1h")
	check("cron", daily.ID, nil, 0, "2026-05-02T05:00:00Z", "")
	check("at within grace", soon.ID, []string{"2026-05-01T11:15:00Z"}, 0, "", "")
	check("at past grace", old.ID, nil, 1, "", "missed by 2h50m0s")
	if st := r.task(old.ID).State; st != StateDone {
		t.Errorf("skipped one-shot is %s", st)
	}
	if !strings.Contains(r.logs.String(), "missed by 2h50m0s") {
		t.Errorf("the skip is not logged:\n%s", r.logs)
	}

	// Down for 50 minutes past a due time: that run happens once, late,
	// and the next is the next one after now (not a second catch-up).
	r2 := newRig(t, d, utc("2026-05-01T10:00:00Z"), nil)
	task := r2.schedule("family", KindEvery, "30m")
	r2.clock.Set(utc("2026-05-01T11:20:00Z")) // 10:30 and 11:00 passed
	r2.restart()
	r2.runDue()
	r2.runDue()
	if got := r2.agent.dues(task.ID); strings.Join(got, " ") != "2026-05-01T10:30:00Z" {
		t.Errorf("after 50m down fired %v, want the 10:30 run once", got)
	}
	if n := r2.task(task.ID).NextRun; !n.Equal(utc("2026-05-01T11:30:00Z")) {
		t.Errorf("next run %v", n)
	}
}

// A delivery that fails is retried with backoff, the failure visible in
// the task, the log and list_tasks; one that keeps failing past the grace
// is skipped.
func TestFailedDeliveryIsRetried(t *testing.T) { storetest.EachDialect(t, testFailedDeliveryIsRetried) }

func testFailedDeliveryIsRetried(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), func(o *Options) {
		o.RetryDelay = func(n int) time.Duration { return time.Duration(n) * time.Minute }
	})
	task := r.schedule("family", KindIn, "10m")
	r.agent.set(errDown, false)
	r.clock.Set(utc("2026-05-01T10:10:00Z"))
	r.runDue()
	got := r.task(task.ID)
	if got.Failures != 1 || !strings.Contains(got.LastError, "database is locked") || !got.RetryAt.Equal(utc("2026-05-01T10:11:00Z")) {
		t.Fatalf("after a failure: %+v", got)
	}
	r.runDue() // before the retry time: not tried
	r.clock.Advance(time.Minute)
	r.runDue()
	if got := r.task(task.ID); got.Failures != 2 || !got.RetryAt.Equal(utc("2026-05-01T10:13:00Z")) {
		t.Fatalf("after two failures: %+v", got)
	}
	info := r.s.info(context.Background(), r.task(task.ID))
	if info.Failures != 2 || !strings.Contains(info.LastError, "2 times") {
		t.Errorf("list_tasks shows %+v", info)
	}
	r.agent.set(nil, false)
	r.clock.Advance(2 * time.Minute)
	r.runDue()
	if got := r.task(task.ID); got.State != StateDone || got.Failures != 0 || got.LastError != "" || got.Runs != 1 {
		t.Errorf("after the retry worked: %+v", got)
	}
	if !strings.Contains(r.logs.String(), "delivering a run failed") {
		t.Error("failure not logged")
	}

	// Failing past the grace: the run is given up, the task moves on.
	every := r.schedule("family", KindEvery, "2h")
	r.agent.set(errDown, false)
	r.until(utc("2026-05-01T13:30:00Z"))
	got = r.task(every.ID)
	if got.Skipped != 1 || !got.NextRun.Equal(utc("2026-05-01T14:13:00Z")) || got.Runs != 0 {
		t.Errorf("failing past the grace: %+v", got)
	}
}

// One run of a task at a time: while the last run is not answered, the
// next due time is skipped, and the unanswered message delivered again
// (the same id), which wakes an agent that gave up without a second
// answer.
func TestOneRunOfATaskAtATime(t *testing.T) { storetest.EachDialect(t, testOneRunOfATaskAtATime) }

func testOneRunOfATaskAtATime(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), nil)
	task := r.schedule("family", KindEvery, "1m")
	r.agent.set(nil, true) // the agent does not answer
	r.until(utc("2026-05-01T10:05:00Z"))
	fires := r.agent.dues(task.ID)
	for _, d := range fires {
		if d != "2026-05-01T10:01:00Z" {
			t.Fatalf("delivered %v, want only the 10:01 run (again)", fires)
		}
	}
	if got := r.task(task.ID); got.Runs != 1 || got.Skipped != 4 || !strings.Contains(got.LastError, "not answered yet") {
		t.Errorf("task %+v", got)
	}
	if info := r.s.info(context.Background(), r.task(task.ID)); !info.Pending {
		t.Errorf("list_tasks does not show the run pending: %+v", info)
	}
	r.agent.set(nil, false)
	r.until(utc("2026-05-01T10:07:00Z"))
	if got := r.agent.dues(task.ID); got[len(got)-1] != "2026-05-01T10:07:00Z" {
		t.Errorf("after the answer: %v", got)
	}
}

// An untrusted group cannot run more than its hourly share however many
// every-minute tasks it makes, nor make more than its tasks.
func TestGroupLimits(t *testing.T) { storetest.EachDialect(t, testGroupLimits) }

func testGroupLimits(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), func(o *Options) { o.MaxTasksPerGroup = 5; o.MaxRunsPerHour = 30 })
	var ids []int64
	for range 5 {
		ids = append(ids, r.schedule("family", KindEvery, "1m").ID)
	}
	if _, err := r.s.Schedule(context.Background(), NewTask{Folder: "family", CreatedBy: "main", Prompt: "x", Kind: KindEvery, Expr: "1m"}); !errors.Is(err, ErrLimit) {
		t.Errorf("sixth task: %v", err)
	}
	// Other groups are not affected.
	other := r.schedule("work", KindEvery, "5m")
	r.until(utc("2026-05-01T12:00:00Z"))
	var fam int
	for _, id := range ids {
		fam += r.task(id).Runs
	}
	// 120 minutes × 5 tasks asked for; 30 per hour allowed.
	if fam != 60 {
		t.Errorf("family ran %d times in 2h, want 60", fam)
	}
	if n := r.task(other.ID).Runs; n != 24 {
		t.Errorf("work ran %d times, want 24", n)
	}
	if !strings.Contains(r.task(ids[0]).LastError, "max_runs_per_hour") && !strings.Contains(r.task(ids[4]).LastError, "max_runs_per_hour") {
		t.Errorf("the cap is not visible: %q", r.task(ids[4]).LastError)
	}
	// Pausing keeps a task in the count; cancelling frees its place.
	r.s.Pause(context.Background(), ids[0])
	if _, err := r.s.Schedule(context.Background(), NewTask{Folder: "family", CreatedBy: "family", Prompt: "x", Kind: KindEvery, Expr: "1h"}); !errors.Is(err, ErrLimit) {
		t.Errorf("with a paused task: %v", err)
	}
	r.s.Cancel(context.Background(), ids[0])
	r.schedule("family", KindEvery, "1h")
}

func TestSchedulePromptIsCleaned(t *testing.T) { storetest.EachDialect(t, testSchedulePromptIsCleaned) }

func testSchedulePromptIsCleaned(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), nil)
	task := r.schedule("family", KindIn, "1h", func(n *NewTask) {
		n.Prompt = "  look at [Image: x.jpg, ref:tg_abc]\x00\x1b[31m again\u2028now  "
	})
	if task.Prompt != "look at (Image: x.jpg, ref:tg_abc]  [31m again now" {
		t.Errorf("prompt %q", task.Prompt)
	}
	for _, p := range []string{"", "   ", strings.Repeat("x", MaxPromptRunes+1)} {
		_, err := r.s.Schedule(context.Background(), NewTask{Folder: "family", CreatedBy: "family", Prompt: p, Kind: KindIn, Expr: "1h"})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("prompt of %d chars: %v", len(p), err)
		}
	}
	_, err := r.s.Schedule(context.Background(), NewTask{Folder: "family", CreatedBy: "family", Prompt: "x", Kind: KindIn, Expr: "1h", Context: "everything"})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("bad context: %v", err)
	}
}

// The loop wakes at the due time of the clock it is given: moving the
// fake clock to it delivers the run, with no sleeping in the test.
func TestLoopFiresWhenTheClockSaysSo(t *testing.T) {
	storetest.EachDialect(t, testLoopFiresWhenTheClockSaysSo)
}

func testLoopFiresWhenTheClockSaysSo(t *testing.T, d sqldialect.Dialect) {
	fired := make(chan Run, 10)
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), nil)
	fa := r.agent
	r.mod = func(o *Options) {
		o.Fire = func(ctx context.Context, run Run) error {
			if err := fa.Fire(ctx, run); err != nil {
				return err
			}
			fired <- run
			return nil
		}
	}
	r.restart()
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); r.s.Wait() }()
	if err := r.s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	task := r.schedule("family", KindIn, "3s")
	later := r.schedule("family", KindIn, "2h")
	r.clock.Advance(3 * time.Second)
	select {
	case run := <-fired:
		if run.TaskID != task.ID {
			t.Fatalf("fired %+v", run)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not fire the due task")
	}
	r.clock.Advance(2 * time.Hour)
	select {
	case run := <-fired:
		if run.TaskID != later.ID {
			t.Fatalf("fired %+v", run)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not fire the second task")
	}
	if err := r.s.Start(ctx); err == nil {
		t.Error("started twice")
	}
}

func TestRunsAndFinishedTasksArePruned(t *testing.T) {
	storetest.EachDialect(t, testRunsAndFinishedTasksArePruned)
}

func testRunsAndFinishedTasksArePruned(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), nil)
	a := r.schedule("family", KindIn, "1m")
	b := r.schedule("family", KindEvery, "1h")
	r.until(utc("2026-05-01T10:30:00Z"))
	r.s.Cancel(context.Background(), b.ID)
	r.clock.Set(utc("2026-06-15T00:00:00Z"))
	r.runDue()
	for _, id := range []int64{a.ID, b.ID} {
		if _, err := r.s.Get(context.Background(), id); !errors.Is(err, ErrNotFound) {
			t.Errorf("task %d kept: %v", id, err)
		}
	}
	var n int
	r.st.DB.QueryRow(`SELECT COUNT(*) FROM scheduled_runs`).Scan(&n)
	if n != 0 {
		t.Errorf("%d runs kept", n)
	}
}

// A pass that fails (here: the run cannot be recorded) leaves the task
// due; the loop then waits errorPause before trying again instead of
// spinning on it.
func TestLoopPausesAfterAnError(t *testing.T) { storetest.EachDialect(t, testLoopPausesAfterAnError) }

func testLoopPausesAfterAnError(t *testing.T, d sqldialect.Dialect) {
	var tries atomic.Int64
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), func(o *Options) {
		o.AfterFire = func(Run) error { tries.Add(1); return errDown }
	})
	r.schedule("family", KindIn, "1m")
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); r.s.Wait() }()
	if err := r.s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitTimer := func(at time.Time) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !slices.ContainsFunc(r.clock.Waiting(), at.Equal) {
			if time.Now().After(deadline) {
				t.Fatalf("the loop never waited until %v (waiting: %v)", at, r.clock.Waiting())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitTimer(utc("2026-05-01T10:01:00Z"))
	r.clock.Set(utc("2026-05-01T10:01:00Z"))
	waitTimer(utc("2026-05-01T10:01:10Z"))
	if n := tries.Load(); n != 1 {
		t.Fatalf("%d tries before the pause, want 1", n)
	}
	r.clock.Advance(errorPause)
	waitTimer(utc("2026-05-01T10:01:20Z"))
	if n := tries.Load(); n != 2 {
		t.Errorf("%d tries after one pause, want 2", n)
	}
}
