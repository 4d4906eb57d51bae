package box_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/box"
)

func TestMain(m *testing.M) {
	box.Main()
	os.Exit(m.Run())
}

var sink [][]byte

func init() {
	// alloc touches arg MB, a MB at a time, and answers how much it held.
	box.Register("test-alloc", func(_ context.Context, _ *os.File, arg []byte) ([]byte, error) {
		mb, err := strconv.Atoi(string(arg))
		if err != nil {
			return nil, err
		}
		for range mb {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			sink = append(sink, b)
		}
		return []byte(strconv.Itoa(len(sink))), nil
	})
	box.Register("test-spin", func(context.Context, *os.File, []byte) ([]byte, error) {
		for n := 0; ; n++ {
			if n < 0 {
				return nil, nil
			}
		}
	})
	box.Register("test-sleep", func(context.Context, *os.File, []byte) ([]byte, error) {
		time.Sleep(time.Hour)
		return nil, nil
	})
	box.Register("test-env", func(context.Context, *os.File, []byte) ([]byte, error) {
		return []byte(strings.Join(os.Environ(), "\n")), nil
	})
	box.Register("test-flood", func(_ context.Context, _ *os.File, _ []byte) ([]byte, error) {
		b := make([]byte, 64<<10)
		for {
			if _, err := os.Stdout.Write(b); err != nil {
				return nil, err
			}
		}
	})
	box.Register("test-fail", func(context.Context, *os.File, []byte) ([]byte, error) {
		return nil, errors.New("the job says no")
	})
	// hold says "started" on fd 3 (one end of a socket pair) and runs until
	// the test closes the other end.
	box.Register("test-hold", func(_ context.Context, in *os.File, _ []byte) ([]byte, error) {
		if _, err := in.Write([]byte("started\n")); err != nil {
			return nil, err
		}
		io.Copy(io.Discard, in)
		return []byte("released"), nil
	})
}

// run runs j with a hang guard far beyond any limit under test.
func run(t *testing.T, ctx context.Context, j box.Job) (*box.Result, error) {
	t.Helper()
	type answer struct {
		r   *box.Result
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		r, err := box.Run(ctx, j)
		ch <- answer{r, err}
	}()
	select {
	case a := <-ch:
		return a.r, a.err
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s%s still running after 3 minutes", j.Func, j.Tool)
		return nil, nil
	}
}

func vmHWM(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM")
	return 0
}

func TestGoJobWithinItsMemoryAnswers(t *testing.T) {
	r, err := run(t, context.Background(), box.Job{Func: "test-alloc", Stdin: []byte("32"), Limits: box.Limits{Memory: 128 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "32" {
		t.Errorf("stdout = %q, want 32", r.Stdout)
	}
	if r.MaxRSS < 32<<20 {
		t.Errorf("MaxRSS = %d, want at least the 32 MB the job touched", r.MaxRSS)
	}
}

func TestGoJobPastItsMemoryIsKilled(t *testing.T) {
	before := vmHWM(t)
	const limit, asked = 64 << 20, 1024
	_, err := run(t, context.Background(), box.Job{Func: "test-alloc", Stdin: []byte(strconv.Itoa(asked)), What: "this PDF",
		Limits: box.Limits{Memory: limit}})
	if !errors.Is(err, box.ErrMemory) {
		t.Fatalf("err = %v, want the memory sentence", err)
	}
	want := "this PDF needs more memory than botd allows for one file (64 MB; media.parse.memory_bytes)"
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	var e *box.Error
	if errors.As(err, &e); e.MaxRSS <= 0 || e.MaxRSS >= asked<<20/2 {
		t.Errorf("child peak RSS = %d, want it stopped well before the %d MB it asked for", e.MaxRSS, asked)
	}
	if grew := vmHWM(t) - before; grew > 64<<20 {
		t.Errorf("the parent's peak RSS grew by %d bytes", grew)
	}
}

func TestToolPastItsMemoryIsKilled(t *testing.T) {
	if _, err := exec.LookPath("stress"); err != nil {
		t.Skip("stress is not installed")
	}
	_, err := run(t, context.Background(), box.Job{Tool: "stress", Args: []string{"--vm", "1", "--vm-bytes", "512M", "--vm-hang", "0", "--timeout", "60"},
		What: "this video", Limits: box.Limits{Memory: 64 << 20}})
	if !errors.Is(err, box.ErrMemory) {
		t.Fatalf("err = %v, want the memory sentence", err)
	}
}

func TestCPUSpinIsStoppedByItsCPULimit(t *testing.T) {
	_, err := run(t, context.Background(), box.Job{Func: "test-spin", What: "this image", Limits: box.Limits{CPU: time.Second, Timeout: 5 * time.Minute}})
	if !errors.Is(err, box.ErrCPU) {
		t.Fatalf("err = %v, want the CPU sentence", err)
	}
	if !strings.Contains(err.Error(), "media.parse.cpu") {
		t.Errorf("err = %q, want it to name media.parse.cpu", err)
	}
}

func TestDeadlineKillsTheChild(t *testing.T) {
	_, err := run(t, context.Background(), box.Job{Func: "test-sleep", What: "this PDF", Limits: box.Limits{Timeout: 200 * time.Millisecond}})
	if !errors.Is(err, box.ErrTimeout) {
		t.Fatalf("err = %v, want the timeout sentence", err)
	}
	if want := "reading this PDF took longer than the 200ms botd allows for one file (media.parse.timeout)"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestCallerContextEndsTheChild(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a, b := socketPair(t)
	type answer struct{ err error }
	ch := make(chan answer, 1)
	go func() {
		_, err := box.Run(ctx, box.Job{Func: "test-hold", Input: b})
		ch <- answer{err}
	}()
	waitLine(t, a, "started")
	cancel()
	select {
	case got := <-ch:
		if !errors.Is(got.err, context.Canceled) || !strings.Contains(got.err.Error(), "the question ended") {
			t.Errorf("err = %v, want the question's end", got.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the child outlived its caller's context")
	}
}

func TestOutputCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  box.Job
	}{
		{"stdout of a Go job", box.Job{Func: "test-flood"}},
		{"file of a tool", box.Job{Tool: "sh", Args: []string{"-c", "head -c 4000000 /dev/zero > big"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.job.Limits.Output = 1 << 20
			_, err := run(t, context.Background(), tc.job)
			if !errors.Is(err, box.ErrOutput) {
				t.Fatalf("err = %v, want the output sentence", err)
			}
		})
	}
}

func TestChildEnvironmentCarriesNoSecret(t *testing.T) {
	t.Setenv("TELEGRAM_BOT_TOKEN", "123:secret-token")
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	r, err := run(t, context.Background(), box.Job{Func: "test-env"})
	if err != nil {
		t.Fatal(err)
	}
	env := string(r.Stdout)
	if strings.Contains(env, "secret") || strings.Contains(env, "TELEGRAM") || strings.Contains(env, "OPENAI") {
		t.Errorf("the child saw the daemon's secrets:\n%s", env)
	}
	if !strings.Contains(env, "PATH="+os.Getenv("PATH")) || !strings.Contains(env, "HOME="+os.TempDir()) {
		t.Errorf("the child has no PATH or no private HOME:\n%s", env)
	}
}

func TestMissingToolSaysWhatToInstall(t *testing.T) {
	_, err := run(t, context.Background(), box.Job{Tool: "botd-no-such-tool", Install: "install poppler-utils to see scanned PDF pages"})
	if !errors.Is(err, box.ErrMissing) {
		t.Fatalf("err = %v, want ErrMissing", err)
	}
	if want := "botd-no-such-tool is not on PATH (install poppler-utils to see scanned PDF pages)"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestToolReadsTheOpenedInputAndLeavesFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.bin")
	if err := os.WriteFile(path, []byte("the bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The name now points elsewhere: the child must read what was opened.
	if err := os.WriteFile(path+".new", []byte("other bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	var got []byte
	var dir string
	_, err = run(t, context.Background(), box.Job{Tool: "sh", Args: []string{"-c", "cp /dev/fd/3 out.bin"}, Input: f,
		Collect: func(d string) error {
			dir = d
			var err error
			got, err = os.ReadFile(filepath.Join(d, "out.bin"))
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "the bytes" {
		t.Errorf("the tool read %q, want the opened file's bytes", got)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the child's directory %s was left behind: %v", dir, err)
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  box.Job
		want string
	}{
		{"Go job error", box.Job{Func: "test-fail", What: "this PDF"}, "this PDF could not be read (the job says no)"},
		{"tool exit", box.Job{Tool: "sh", Args: []string{"-c", "echo 'moov atom not found' >&2; exit 1"}, What: "this video"},
			"this video could not be read (exit status 1: moov atom not found)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, context.Background(), tc.job)
			if !errors.Is(err, box.ErrFailed) || err.Error() != tc.want {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// waitLogger signals each "waiting" record of the pool.
type waitLogger struct{ waiting chan string }

func (w waitLogger) Enabled(context.Context, slog.Level) bool { return true }
func (w waitLogger) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "waiting for memory") {
		w.waiting <- r.Message
	}
	return nil
}
func (w waitLogger) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w waitLogger) WithGroup(string) slog.Handler      { return w }

func socketPair(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := os.NewFile(uintptr(fds[0]), "test"), os.NewFile(uintptr(fds[1]), "child")
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func waitLine(t *testing.T, f *os.File, want string) {
	t.Helper()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != want {
		t.Fatalf("read %q, %v; want %q", line, err, want)
	}
}

func TestPoolQueuesWhatDoesNotFit(t *testing.T) {
	const weight = 64 << 20
	box.SetPool(2 * weight)
	t.Cleanup(func() { box.SetPool(0) })
	lim := box.Limits{Memory: weight}
	log := slog.New(waitLogger{waiting: make(chan string, 4)})
	waiting := log.Handler().(waitLogger).waiting

	type answer struct {
		r   *box.Result
		err error
	}
	start := func(ctx context.Context, in *os.File) chan answer {
		ch := make(chan answer, 1)
		go func() {
			r, err := box.Run(ctx, box.Job{Func: "test-hold", Input: in, Limits: lim, Log: log})
			ch <- answer{r, err}
		}()
		return ch
	}
	var mine [3]*os.File
	var done [3]chan answer
	for i := range 2 {
		a, b := socketPair(t)
		mine[i], done[i] = a, start(context.Background(), b)
		waitLine(t, a, "started")
	}

	// A fourth job whose question ends while it queues is told botd is busy.
	ctx, cancel := context.WithCancel(context.Background())
	_, b4 := socketPair(t)
	busy := start(ctx, b4)
	<-waiting
	cancel()
	if got := <-busy; !errors.Is(got.err, box.ErrBusy) || got.err.Error() != "botd is busy reading other files; ask again in a minute" {
		t.Errorf("queued job whose ctx ended: %v, want the busy sentence", got.err)
	}

	a, b := socketPair(t)
	mine[2], done[2] = a, start(context.Background(), b)
	<-waiting // the third cannot start while two hold the pool
	mine[0].Close()
	if got := <-done[0]; got.err != nil || string(got.r.Stdout) != "released" {
		t.Fatalf("first job: %v", got.err)
	}
	waitLine(t, mine[2], "started") // it starts once the first is done
	for _, i := range []int{1, 2} {
		mine[i].Close()
		got := <-done[i]
		if got.err != nil {
			t.Fatalf("job %d: %v", i, got.err)
		}
		if i == 2 && got.r.Waited <= 0 {
			t.Errorf("the third job says it did not wait")
		}
	}
}

func ExampleRun() {
	_, err := box.Run(context.Background(), box.Job{Tool: "botd-no-such-tool", Install: "install it to read this"})
	fmt.Println(err)
	// Output: botd-no-such-tool is not on PATH (install it to read this)
}

// OnKilled hears why each stopped child was stopped, and nothing of a
// child that answered or failed on its own.
func TestOnKilledHearsTheReason(t *testing.T) {
	var mu sync.Mutex
	var heard []string
	box.OnKilled(func(reason string) {
		mu.Lock()
		heard = append(heard, reason)
		mu.Unlock()
	})
	t.Cleanup(func() { box.OnKilled(func(string) {}) })
	for _, tc := range []struct {
		job  box.Job
		want string
	}{
		{box.Job{Func: "test-alloc", Stdin: []byte("8"), Limits: box.Limits{Memory: 128 << 20}}, ""},
		{box.Job{Func: "test-fail"}, ""},
		{box.Job{Func: "test-alloc", Stdin: []byte("1024"), Limits: box.Limits{Memory: 64 << 20}}, "memory"},
		{box.Job{Func: "test-sleep", Limits: box.Limits{Timeout: 200 * time.Millisecond}}, "timeout"},
	} {
		mu.Lock()
		heard = nil
		mu.Unlock()
		run(t, context.Background(), tc.job)
		mu.Lock()
		got := strings.Join(heard, ",")
		mu.Unlock()
		if got != tc.want {
			t.Errorf("%s %s: heard %q, want %q", tc.job.Func, tc.job.Stdin, got, tc.want)
		}
	}
}
