//go:build linux

package doctext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// What the red-team test tells its child, one Extract per process: peak
// memory belongs to a process, so each file gets a fresh one.
const (
	helperFile    = "BOTD_DOCTEXT_HELPER_FILE"
	helperTimeout = "BOTD_DOCTEXT_HELPER_TIMEOUT"
)

// helperReport is what the child prints, on one line after its prefix.
type helperReport struct {
	Err      string `json:"err,omitempty"`
	TooLarge bool   `json:"too_large,omitempty"`
	Deadline bool   `json:"deadline,omitempty"`
	Text     string `json:"text,omitempty"`
	Shown    string `json:"shown,omitempty"`
	HWMKB    int64  `json:"hwm_kb"`
}

// TestHelperChild is the child side of TestRedTeamFiles: one Extract
// with a deadline, then what it gave and the process's own high-water
// mark of resident memory.
func TestHelperChild(t *testing.T) {
	file := os.Getenv(helperFile)
	if file == "" {
		t.Skip("only runs as the child of TestRedTeamFiles")
	}
	timeout, err := time.ParseDuration(os.Getenv(helperTimeout))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := Extract(ctx, f, st.Size(), filepath.Base(file), "", Options{})
	rep := helperReport{Text: res.Text, Shown: res.Shown}
	if err != nil {
		rep.Err = err.Error()
		rep.TooLarge = errors.Is(err, ErrTooLarge)
		rep.Deadline = errors.Is(err, context.DeadlineExceeded)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			rep.HWMKB, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	b, _ := json.Marshal(rep)
	fmt.Printf("\nhelper-report %s\n", b)
}

// runHelper extracts file in a child and returns its report and the CPU
// time it used.
func runHelper(t *testing.T, file string, timeout time.Duration) (helperReport, time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperFile+"="+file, helperTimeout+"="+timeout.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var rep helperReport
	found := false
	for l := range strings.Lines(string(out)) {
		if s, ok := strings.CutPrefix(l, "helper-report "); ok {
			if err := json.Unmarshal([]byte(s), &rep); err != nil {
				t.Fatalf("report %q: %v", s, err)
			}
			found = true
		}
	}
	if !found || rep.HWMKB == 0 {
		t.Fatalf("no report from the child:\n%s", out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	// ru.Maxrss is logged, not asserted: Go starts a child with vfork, and
	// Linux carries the parent's high-water mark (this test binary's,
	// grown by other tests) into the child's at exec. VmHWM is the
	// child's own.
	t.Logf("peak RSS %d MB (rusage maxrss %d MB), CPU %v", rep.HWMKB>>10, ru.Maxrss>>10, cpu.Round(time.Millisecond))
	return rep, cpu
}

// TestRedTeamFiles runs each of the red team's files through Extract in
// a child process, as botd would: each is answered (a clear error, or
// text) within bounded memory and CPU time, whatever it asks for.
func TestRedTeamFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds files that expand to gigabytes")
	}
	type want struct {
		tooLarge bool   // ErrTooLarge
		anyOf    bool   // text, ErrTooLarge or the deadline: a thrash has no one right answer
		say      string // in the error, or in the text
	}
	cases := []struct {
		name    string
		file    string
		data    func() []byte
		timeout time.Duration
		want    want
		maxMB   int64
		maxCPU  time.Duration
	}{
		{"eight filters of 64 MiB rows", "bomb.pdf", doctexttest.FlateBombPDF, time.Minute,
			want{tooLarge: true, say: "8 filters"}, 100, 5 * time.Second},
		{"a 4 Mi-entry xref stream", "xref.pdf", doctexttest.HugeXrefPDF, time.Minute,
			want{tooLarge: true, say: "claims 4194304 objects"}, 100, 5 * time.Second},
		// The deadline is botd's run_timeout, shortened; the old reader
		// burnt 150 s (459 s) of CPU on these.
		{"2000 pages over nine 64 MiB object streams", "thrash.pdf", func() []byte { return doctexttest.ObjStreamThrashPDF(2000) },
			5 * time.Second, want{anyOf: true}, 100, 3 * time.Second},
		{"6000 pages over nine 64 MiB object streams", "thrash6000.pdf", func() []byte { return doctexttest.ObjStreamThrashPDF(6000) },
			5 * time.Second, want{anyOf: true}, 100, 3 * time.Second},
		{"2000 pages over nine 6 MiB object streams", "thrash6.pdf", func() []byte { return doctexttest.ObjStreamPDF(2000, 9, 6<<20) },
			5 * time.Second, want{anyOf: true}, 100, 3 * time.Second},
		{"one text run of 47 MiB", "run.docx", doctexttest.HugeRunDOCX, time.Minute,
			want{say: doctexttest.HugeRunLine[:20]}, 30, 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(file, tc.data(), 0o600); err != nil {
				t.Fatal(err)
			}
			rep, cpu := runHelper(t, file, tc.timeout)
			switch {
			case tc.want.anyOf:
				if rep.Err != "" && !rep.TooLarge && !rep.Deadline {
					t.Errorf("error %q, want text, ErrTooLarge or the deadline", rep.Err)
				}
			case tc.want.tooLarge:
				if !rep.TooLarge || !strings.Contains(rep.Err, tc.want.say) {
					t.Errorf("error %q, want ErrTooLarge saying %q", rep.Err, tc.want.say)
				}
			default:
				if rep.Err != "" || !strings.Contains(rep.Text, tc.want.say) {
					t.Errorf("error %q, text %.200q: want text with %q", rep.Err, rep.Text, tc.want.say)
				}
			}
			t.Logf("answer: %s%.200s", rep.Err, rep.Text)
			if raceOn {
				return // the answer holds under the race detector; the figures do not
			}
			if mb := rep.HWMKB >> 10; mb > tc.maxMB {
				t.Errorf("peak RSS %d MB, want at most %d", mb, tc.maxMB)
			}
			if cpu > tc.maxCPU {
				t.Errorf("CPU time %v, want at most %v", cpu, tc.maxCPU)
			}
		})
	}
}
