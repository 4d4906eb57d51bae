//go:build linux

package box_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/botd-dev/botd/internal/box"
)

// secret is what the escaping child tries to read in the parent's memory.
var secret = [16]byte{'s', 'k', '-', 'p', 'a', 'r', 'e', 'n', 't', '-', 's', 'e', 'c', 'r', 'e', 't'}

// escapePlan is where a hostile child tries to reach: the parent, a data
// directory beside the job's (config.yaml, botd.db), and listeners of the
// test on loopback.
type escapePlan struct {
	Parent  int     `json:"parent"`
	MemAddr uintptr `json:"mem_addr"`
	Data    string  `json:"data"`
	Outside string  `json:"outside"` // a file to create outside the job's directory
	TCP     string  `json:"tcp"`
	UDP     string  `json:"udp"`
	Unix    string  `json:"unix"`
}

type attempt struct {
	Name string `json:"name"`
	Err  string `json:"err"` // empty: it worked
}

// escape tries each way out and says how each went.
func escape(p escapePlan) []attempt {
	var out []attempt
	try := func(name string, f func() error) {
		a := attempt{Name: name}
		if err := f(); err != nil {
			a.Err = err.Error()
		}
		out = append(out, a)
	}
	proc := func(what string) string { return fmt.Sprintf("/proc/%d/%s", p.Parent, what) }
	try("read the parent's environ", func() error {
		b, err := os.ReadFile(proc("environ"))
		if err == nil && len(b) == 0 {
			return errors.New("empty")
		}
		return err
	})
	try("read the parent's memory", func() error {
		f, err := os.Open(proc("mem"))
		if err != nil {
			return err
		}
		defer f.Close()
		b := make([]byte, len(secret))
		if _, err := f.ReadAt(b, int64(p.MemAddr)); err != nil {
			return err
		}
		if !bytes.Equal(b, secret[:]) {
			return fmt.Errorf("read %q, not the secret", b)
		}
		return nil
	})
	try("signal the parent", func() error { return syscall.Kill(p.Parent, 0) })
	try("read config.yaml", func() error { _, err := os.ReadFile(filepath.Join(p.Data, "config.yaml")); return err })
	try("read botd.db", func() error { _, err := os.ReadFile(filepath.Join(p.Data, "botd.db")); return err })
	try("list the data directory", func() error { _, err := os.ReadDir(p.Data); return err })
	try("overwrite config.yaml", func() error {
		return os.WriteFile(filepath.Join(p.Data, "config.yaml"), []byte("owned: true\n"), 0o600)
	})
	try("create a file in the data directory", func() error {
		return os.WriteFile(filepath.Join(p.Data, "planted"), []byte("x"), 0o600)
	})
	try("create a file outside its directory", func() error { return os.WriteFile(p.Outside, []byte("x"), 0o600) })
	try("connect over TCP", func() error {
		c, err := net.Dial("tcp", p.TCP)
		if err == nil {
			_, err = c.Write([]byte("escaped"))
			c.Close()
		}
		return err
	})
	try("send over UDP", func() error {
		c, err := net.Dial("udp", p.UDP)
		if err == nil {
			_, err = c.Write([]byte("escaped"))
			c.Close()
		}
		return err
	})
	try("connect to a unix socket", func() error {
		c, err := net.Dial("unix", p.Unix)
		if err == nil {
			_, err = c.Write([]byte("escaped"))
			c.Close()
		}
		return err
	})
	return out
}

func init() {
	box.Register("test-escape", func(_ context.Context, _ *os.File, arg []byte) ([]byte, error) {
		var p escapePlan
		if err := json.Unmarshal(arg, &p); err != nil {
			return nil, err
		}
		tries := escape(p)
		// ptrace only in the child: in the test's own process it would be
		// its own tracer.
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(p.Parent), 0, 0, 0, 0)
		a := attempt{Name: "ptrace the parent"}
		if e != 0 {
			a.Err = e.Error()
		}
		return json.Marshal(append(tries, a))
	})
}

// escapeTargets sets up the places a hostile child goes for, and the
// check that none was reached.
type escapeTargets struct {
	plan escapePlan
	tcp  net.Listener
	udp  net.PacketConn
	unix net.Listener
}

func newEscapeTargets(t *testing.T) *escapeTargets {
	t.Helper()
	data := t.TempDir()
	for name, body := range map[string]string{"config.yaml": "telegram:\n  token: 123:secret-token\n", "botd.db": "SQLite format 3\x00"} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(data, "botd.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close(); udp.Close(); ul.Close() })
	outside := filepath.Join(os.TempDir(), fmt.Sprintf("botd-escaped-%d", os.Getpid()))
	t.Cleanup(func() { os.Remove(outside) })
	return &escapeTargets{
		plan: escapePlan{Parent: os.Getpid(), MemAddr: uintptr(unsafe.Pointer(&secret[0])), Data: data, Outside: outside,
			TCP: tcp.Addr().String(), UDP: udp.LocalAddr().String(), Unix: sock},
		tcp: tcp, udp: udp, unix: ul,
	}
}

// assertUntouched checks the data directory and the listeners after the
// child: the first connection or datagram each listener takes is the
// test's own, sent now, so the child's would have come before it.
func (e *escapeTargets) assertUntouched(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(e.plan.Data, "config.yaml")); err != nil || strings.Contains(string(b), "owned") {
		t.Errorf("config.yaml after the child: %q, %v", b, err)
	}
	for _, p := range []string{filepath.Join(e.plan.Data, "planted"), e.plan.Outside} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the child left %s: %v", p, err)
		}
	}
	for _, l := range []net.Listener{e.tcp, e.unix} {
		c, err := net.Dial(l.Addr().Network(), l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("test")); err != nil {
			t.Fatal(err)
		}
		c.Close()
		got, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 16)
		n, _ := got.Read(b)
		got.Close()
		if string(b[:n]) != "test" {
			t.Errorf("the %s listener's first connection said %q: the child reached it", l.Addr().Network(), b[:n])
		}
	}
	c, err := net.Dial("udp", e.plan.UDP)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("test"))
	c.Close()
	b := make([]byte, 16)
	n, _, err := e.udp.ReadFrom(b)
	if err != nil || string(b[:n]) != "test" {
		t.Errorf("the UDP listener's first datagram: %q, %v: the child reached it", b[:n], err)
	}
}

func confinement(t *testing.T) box.Confinement {
	t.Helper()
	if _, err := box.Run(context.Background(), box.Job{Tool: "true"}); err != nil {
		t.Fatal(err)
	}
	c := box.Confined()
	t.Logf("confinement: %+v", c)
	return c
}

// guarded says whether the kernel gives what keeps an attempt out; an
// attempt nothing guards on this machine is logged, not asserted.
func guarded(c box.Confinement, name string) bool {
	root := os.Geteuid() == 0 // root reads a non-dumpable process's /proc
	switch {
	case strings.Contains(name, "environ"), strings.Contains(name, "memory"):
		return !root || c.Landlock > 0 || c.Namespace
	case strings.Contains(name, "signal"):
		return c.Landlock >= 6
	case strings.Contains(name, "ptrace"):
		return c.Seccomp || c.Landlock > 0
	case strings.Contains(name, "TCP"):
		return c.Seccomp || c.Namespace || c.Landlock >= 4
	case strings.Contains(name, "UDP"):
		return c.Seccomp || c.Namespace
	case strings.Contains(name, "unix"):
		return c.Seccomp
	default: // files
		return c.Landlock > 0
	}
}

func TestParentIsNotDumpable(t *testing.T) {
	// TestMain called box.Main, as botd's main does.
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || d != 0 {
		t.Errorf("PR_GET_DUMPABLE = %d, %v; want 0", d, err)
	}
}

// TestGoJobCannotEscape: a Go job that tries every way out of its box is
// refused each, and the same attempts from the test's own process (no
// box) succeed, so the attempts themselves are sound.
func TestGoJobCannotEscape(t *testing.T) {
	c := confinement(t)
	e := newEscapeTargets(t)
	arg, _ := json.Marshal(e.plan)
	r, err := run(t, context.Background(), box.Job{Func: "test-escape", Stdin: arg})
	if err != nil {
		t.Fatal(err)
	}
	var tries []attempt
	if err := json.Unmarshal(r.Stdout, &tries); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if len(tries) != 13 {
		t.Fatalf("%d attempts, want 13: %+v", len(tries), tries)
	}
	for _, a := range tries {
		switch {
		case a.Err != "" && guarded(c, a.Name):
			t.Logf("%s: refused (%s)", a.Name, a.Err)
		case a.Err != "":
			t.Logf("%s: refused (%s), though nothing on this machine guards it", a.Name, a.Err)
		case guarded(c, a.Name):
			t.Errorf("the child could %s", a.Name)
		default:
			t.Logf("the child could %s: this kernel offers nothing against it", a.Name)
		}
	}
	e.assertUntouched(t)

	// The control: the test itself (its own environment and memory).
	self := e.plan
	self.Parent = os.Getpid()
	for _, a := range escape(self) {
		if os.Geteuid() != 0 && (strings.Contains(a.Name, "environ") || strings.Contains(a.Name, "memory")) {
			// Not root: the test is not dumpable (box.Main), so its
			// environment and memory are root's, closed even to itself.
			if a.Err == "" {
				t.Errorf("unboxed, could %s of a non-dumpable process", a.Name)
			}
			continue
		}
		if a.Err != "" {
			t.Errorf("unboxed, %s failed too (%s): the attempt proves nothing", a.Name, a.Err)
		}
	}
}

// escapeScript is the same attempts by a shell and its tools, each
// printing LEAK or DENIED.
const escapeScript = `
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "LEAK $name"; else echo "DENIED $name"; fi; }
try environ cat /proc/$PARENT/environ
try mem dd if=/proc/$PARENT/mem bs=1 skip=$MEMADDR count=16
try config cat "$DATA/config.yaml"
try db cat "$DATA/botd.db"
try ls ls "$DATA"
try overwrite sh -c 'echo owned: true > "$DATA/config.yaml"'
try plant sh -c 'echo x > "$DATA/planted"'
try outside sh -c 'echo x > "$OUTSIDE"'
try tcp bash -c 'echo escaped > /dev/tcp/$TCPHOST/$TCPPORT'
try udp bash -c 'echo escaped > /dev/udp/$UDPHOST/$UDPPORT'
try kill kill -0 $PARENT
`

func TestToolCannotEscape(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for /dev/tcp")
	}
	c := confinement(t)
	e := newEscapeTargets(t)
	th, tp, _ := net.SplitHostPort(e.plan.TCP)
	uh, up, _ := net.SplitHostPort(e.plan.UDP)
	// The box passes no environment: the plan goes in the script.
	vars := fmt.Sprintf("PARENT=%d MEMADDR=%d DATA=%q OUTSIDE=%q TCPHOST=%s TCPPORT=%s UDPHOST=%s UDPPORT=%s\nexport PARENT MEMADDR DATA OUTSIDE TCPHOST TCPPORT UDPHOST UDPPORT\n",
		e.plan.Parent, e.plan.MemAddr, e.plan.Data, e.plan.Outside, th, tp, uh, up)
	script := vars + escapeScript
	r, err := run(t, context.Background(), box.Job{Tool: "sh", Args: []string{"-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"environ": "environ", "mem": "memory", "config": "file", "db": "file", "ls": "file",
		"overwrite": "file", "plant": "file", "outside": "file", "tcp": "TCP", "udp": "UDP", "kill": "signal"}
	lines := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
	if len(lines) != len(names) {
		t.Fatalf("the script said %q", r.Stdout)
	}
	for _, l := range lines {
		verdict, name, _ := strings.Cut(l, " ")
		if verdict == "LEAK" && guarded(c, names[name]) {
			t.Errorf("the tool could %s", name)
		}
	}
	e.assertUntouched(t)

	// The control: the same script outside the box reaches everything.
	cmd := exec.Command("sh", "-c", strings.Replace(script, "PARENT="+strconv.Itoa(e.plan.Parent), "PARENT="+strconv.Itoa(os.Getpid()), 1))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		verdict, name, _ := strings.Cut(l, " ")
		switch {
		case (name == "environ" || name == "mem") && os.Geteuid() != 0:
			// Not root: the test is not dumpable (box.Main), so even an
			// ordinary child of the same user cannot read them.
			if verdict != "DENIED" {
				t.Errorf("an ordinary child could read the non-dumpable parent's %s", name)
			}
		case verdict != "LEAK":
			t.Errorf("unboxed the script said %q: the attempt proves nothing", l)
		}
	}
}

// TestForkBombStopsAtNPROC: a shell that forks 500 sleepers is stopped at
// RLIMIT_NPROC, which in the child's own user namespace binds root too.
func TestForkBombStopsAtNPROC(t *testing.T) {
	c := confinement(t)
	if os.Geteuid() == 0 {
		t.Skip("the kernel never applies RLIMIT_NPROC to root: TestConfinementOfAnUnprivilegedUser runs this as nobody")
	}
	if c.NProc == 0 {
		t.Skipf("no RLIMIT_NPROC on this machine (%s)", c.NoNamespace)
	}
	r, err := run(t, context.Background(), box.Job{Tool: "sh", Args: []string{"-c",
		`i=0; while [ $i -lt 500 ]; do sleep 600 & i=$((i+1)); echo $i; done`}})
	if !errors.Is(err, box.ErrFailed) || !strings.Contains(err.Error(), "fork") {
		t.Fatalf("err = %v, want the shell unable to fork", err)
	}
	var forked int
	if f := strings.Fields(string(r.Stdout)); len(f) > 0 {
		forked, _ = strconv.Atoi(f[len(f)-1])
	}
	if forked == 0 || uint64(forked) >= c.NProc {
		t.Errorf("forked %d sleepers, want some but fewer than RLIMIT_NPROC %d", forked, c.NProc)
	}
	t.Logf("the shell forked %d sleepers, then could not (RLIMIT_NPROC %d)", forked, c.NProc)
}

// TestRealToolsWorkConfined: the tools botd runs in the box (ffprobe,
// ffmpeg, pdftoppm) still read their input and write their output under
// every confinement, on inputs made here by the same tools unconfined.
func TestRealToolsWorkConfined(t *testing.T) {
	dir := t.TempDir()
	mk := func(t *testing.T, out string, tool string, args ...string) *os.File {
		t.Helper()
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
		if b, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", tool, err, b)
		}
		f, err := os.Open(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	clip := func(t *testing.T) *os.File {
		return mk(t, "clip.mp4", "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=5", "-f", "lavfi",
			"-i", "sine=frequency=440", "-t", "2", "-pix_fmt", "yuv420p", filepath.Join(dir, "clip.mp4"))
	}
	for _, tc := range []struct {
		name  string
		input func(t *testing.T) *os.File
		tool  string
		args  []string
		want  string // a file it leaves, or its stdout
	}{
		{"ffprobe duration", clip, "ffprobe", []string{"-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", "/dev/fd/3"}, "2.0"},
		{"ffmpeg still", clip, "ffmpeg", []string{"-v", "error", "-nostdin", "-y", "-ss", "1", "-i", "/dev/fd/3", "-frames:v", "1", "still.jpg"}, "still.jpg"},
		{"ffmpeg sound", clip, "ffmpeg", []string{"-v", "error", "-nostdin", "-y", "-i", "/dev/fd/3", "-vn", "-ac", "1", "sound.wav"}, "sound.wav"},
		{"pdftoppm page", func(t *testing.T) *os.File {
			return mk(t, "doc.pdf", "gs", "-q", "-dNOPAUSE", "-dBATCH", "-sDEVICE=pdfwrite", "-sOutputFile="+filepath.Join(dir, "doc.pdf"),
				"-c", "/Helvetica findfont 24 scalefont setfont 72 700 moveto (Hello box) show showpage")
		}, "pdftoppm", []string{"-r", "50", "-png", "/dev/fd/3", "page"}, "page-1.png"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.tool); err != nil {
				t.Skipf("%s is not installed", tc.tool)
			}
			in := tc.input(t)
			var size int64 = -1
			r, err := run(t, context.Background(), box.Job{Tool: tc.tool, Args: tc.args, Input: in, Collect: func(d string) error {
				if st, err := os.Stat(filepath.Join(d, tc.want)); err == nil {
					size = st.Size()
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(r.Stdout), tc.want) && size <= 0 {
				t.Errorf("stdout %q and no %s", r.Stdout, tc.want)
			}
		})
	}
}

// TestConfinementOfAnUnprivilegedUser runs the tests above again in a copy
// of this test binary as nobody, botd's usual case: there the parent's
// non-dumpable flag is what an ordinary child meets (root would read
// through it), and RLIMIT_NPROC binds (root is exempt).
func TestConfinementOfAnUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("already unprivileged: the tests above ran as such")
	}
	if testing.Short() {
		t.Skip("short")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A directory nobody can enter (t.TempDir's parents are root's only).
	dir, err := os.MkdirTemp("", "botd-box-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "box.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []string{"TestParentIsNotDumpable", "TestGoJobCannotEscape", "TestToolCannotEscape", "TestForkBombStopsAtNPROC"}
	cmd := exec.Command(bin, "-test.run", "^("+strings.Join(tests, "|")+")$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	// Its own temporary directory: the job directories and the file it
	// must not plant go there, whoever may write the machine's.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + tmp}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("as nobody:\n%s", out)
	if err != nil {
		t.Fatalf("the tests failed as nobody: %v", err)
	}
	for _, name := range tests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass as nobody", name)
		}
	}
}
