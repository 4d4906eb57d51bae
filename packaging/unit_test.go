package packaging

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unitFile reads a systemd unit into section.key → values (a key may
// repeat, as SystemCallFilter does).
func unitFile(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: not key=value: %q", path, line)
			}
			out[section+"."+k] = append(out[section+"."+k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The unit runs botd run as botd, restarts it on failure and confines it:
// the hardening the issue asks for, each directive with its exact value.
func TestUnitHardening(t *testing.T) {
	u := unitFile(t, "botd.service")
	for _, tc := range []struct{ key, want string }{
		{"Service.ExecStart", "/usr/bin/botd run --config /etc/botd/config.yaml"},
		{"Service.ExecReload", "/bin/kill -HUP $MAINPID"},
		{"Service.User", "botd"},
		{"Service.Group", "botd"},
		{"Service.Restart", "on-failure"},
		{"Service.NoNewPrivileges", "yes"},
		{"Service.ProtectSystem", "strict"},
		{"Service.ProtectHome", "yes"},
		{"Service.PrivateTmp", "yes"},
		{"Service.ReadWritePaths", "/var/lib/botd"},
		{"Service.CapabilityBoundingSet", ""},
		{"Service.AmbientCapabilities", ""},
		{"Install.WantedBy", "multi-user.target"},
	} {
		got, ok := u[tc.key]
		if !ok || len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s = %q, want exactly %q", tc.key, got, tc.want)
		}
	}
	filters := u["Service.SystemCallFilter"]
	if len(filters) == 0 || filters[0] != "@system-service" {
		t.Errorf("SystemCallFilter = %q, want @system-service first", filters)
	}
	for _, f := range filters {
		if strings.HasPrefix(f, "~") {
			t.Errorf("SystemCallFilter %q: a deny list would reset the allow list", f)
		}
	}
	// Nothing but the data is writable, and no other line widens that.
	for _, k := range []string{"Service.ReadOnlyPaths", "Service.StateDirectory", "Service.LogsDirectory", "Service.CacheDirectory", "Service.RuntimeDirectory"} {
		if v, ok := u[k]; ok {
			t.Errorf("%s = %q: the data directory is the only writable path", k, v)
		}
	}
	// botd's box needs user and network namespaces for its children.
	if v, ok := u["Service.RestrictNamespaces"]; ok {
		t.Errorf("RestrictNamespaces = %q would break the parsers' box", v)
	}
}

// systemd-analyze verify passes on the unit. The binary it names must
// exist, so this checks a copy whose ExecStart names a stand-in; the test
// of the installed package verifies the unit as installed.
func TestUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (apt-get install systemd)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "botd")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit, err := os.ReadFile("botd.service")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/bin/botd ") {
		t.Fatal("botd.service: no ExecStart=/usr/bin/botd")
	}
	copyPath := filepath.Join(dir, "botd.service")
	if err := os.WriteFile(copyPath, []byte(strings.ReplaceAll(string(unit), "/usr/bin/botd", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", copyPath).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
