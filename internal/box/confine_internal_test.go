package box

import (
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
)

// records keeps what was logged.
type records struct{ got *[]slog.Record }

func (r records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	*r.got = append(*r.got, rec)
	return nil
}
func (r records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r records) WithGroup(string) slog.Handler      { return r }

func TestConfinementLogLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Confinement
		level slog.Level
		want  []string
	}{
		{"everything", Confinement{Landlock: 7, Seccomp: true, Namespace: true, NProc: 72}, slog.LevelInfo,
			[]string{"box: children confined: no_new_privs, landlock ABI 7 (files, TCP, signals, abstract sockets)", "seccomp", "own user and network namespace (no interfaces), RLIMIT_NPROC 72"}},
		{"old kernel, namespaces off", Confinement{Landlock: 3, Seccomp: true, NoNamespace: "operation not permitted"}, slog.LevelWarn,
			[]string{"box: children partly confined", "landlock before ABI 6: children can signal botd", "network namespace unavailable (operation not permitted): RLIMIT_NPROC not set", "landlock ABI 3 (files only)"}},
		{"no landlock", Confinement{Seccomp: true, Namespace: true, NProc: 72}, slog.LevelWarn,
			[]string{"landlock unavailable", "children can read and write every file botd's user can"}},
		{"root", Confinement{Landlock: 7, Seccomp: true, Namespace: true}, slog.LevelWarn,
			[]string{"botd runs as root, whom RLIMIT_NPROC never binds"}},
		{"no seccomp", Confinement{Landlock: 7, Namespace: true, NProc: 72}, slog.LevelWarn,
			[]string{"seccomp unavailable", "children can open sockets"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []slog.Record
			logConfinement(slog.New(records{&got}), tc.c)
			if len(got) != 1 {
				t.Fatalf("%d records, want one line", len(got))
			}
			if got[0].Level != tc.level {
				t.Errorf("level %v, want %v", got[0].Level, tc.level)
			}
			for _, w := range tc.want {
				if !strings.Contains(got[0].Message, w) {
					t.Errorf("%q does not say %q", got[0].Message, w)
				}
			}
		})
	}
}

// TestStartWithoutNamespacesOnceRefused: a kernel that refuses the
// namespaces (here: a start that fails only with them) gets its children
// started without, from then on without trying, and says why.
func TestStartWithoutNamespacesOnceRefused(t *testing.T) {
	nsMu.Lock()
	saved := [3]any{nsKnown, nsOK, nsWhy}
	nsKnown, nsOK, nsWhy = false, false, ""
	nsMu.Unlock()
	t.Cleanup(func() {
		nsMu.Lock()
		nsKnown, nsOK, nsWhy = saved[0].(bool), saved[1].(bool), saved[2].(string)
		nsMu.Unlock()
	})
	var asked []bool
	newCmd := func(ns bool) (*exec.Cmd, error) {
		asked = append(asked, ns)
		if ns {
			return exec.Command("/nonexistent/botd-refused-namespaces"), nil
		}
		return exec.Command("true"), nil
	}
	log := slog.New(records{new([]slog.Record)})
	for range 2 {
		cmd, err := startChild(newCmd, log)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if len(asked) != 3 || !asked[0] || asked[1] || asked[2] {
		t.Errorf("asked for namespaces %v, want [true false false]", asked)
	}
	c := Confined()
	if c.Namespace || c.NProc != 0 || c.NoNamespace != "no such file or directory" {
		t.Errorf("Confined() = %+v, want no namespace, saying why without the path", c)
	}
}
