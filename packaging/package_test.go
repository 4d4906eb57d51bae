package packaging

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	testVersion = "v1.2.3-test"
	testCommit  = "c0ffee123456"
	testDate    = "2026-11-28T12:00:00Z"
)

// buildPackage runs scripts/package.sh, as make package does, for the
// host's architecture into a temporary dist/ and returns it.
func buildPackage(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds botd and its package")
	}
	dist := t.TempDir()
	cmd := exec.Command("../scripts/package.sh")
	cmd.Env = append(os.Environ(),
		"ARCHS="+runtime.GOARCH, "DIST="+dist, "VERSION="+testVersion,
		"LDFLAGS=-X main.version="+testVersion+" -X main.commit="+testCommit+" -X main.date="+testDate,
		// The build as go vet and go build do it: the build cache is warm.
		"BOTD_PKG_DEVBUILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/package.sh: %v\n%s", err, out)
	}
	return dist
}

func onlyMatch(t *testing.T, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) != 1 {
		t.Fatalf("%s: %v %v, want one file", pattern, m, err)
	}
	return m[0]
}

// make package: a tarball with the binary, and a .deb that installs,
// runs as botd (the web room's login page answers), upgrades, removes
// and purges as README's Install section says.
func TestPackage(t *testing.T) {
	dist := buildPackage(t)
	arch := runtime.GOARCH

	t.Run("tarball", func(t *testing.T) {
		tgz := onlyMatch(t, filepath.Join(dist, "botd_"+testVersion+"_linux_"+arch+".tar.gz"))
		got := tarEntries(t, tgz)
		prefix := "botd_" + testVersion + "_linux_" + arch + "/"
		for name, mode := range map[string]int64{"botd": 0o755, "README.md": 0o644, "config.example.yaml": 0o644, "botd.service": 0o644} {
			m, ok := got[prefix+name]
			if !ok {
				t.Errorf("%s: no %s%s in %v", tgz, prefix, name, got)
			} else if m&0o777 != mode {
				t.Errorf("%s%s: mode %o, want %o", prefix, name, m&0o777, mode)
			}
		}
		sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
		if err != nil || !strings.Contains(string(sums), filepath.Base(tgz)) {
			t.Errorf("SHA256SUMS does not name %s: %v\n%s", filepath.Base(tgz), err, sums)
		}
	})

	deb := onlyMatch(t, filepath.Join(dist, "botd_*_"+arch+".deb"))
	t.Run("deb control", func(t *testing.T) {
		if _, err := exec.LookPath("dpkg-deb"); err != nil {
			t.Skip("dpkg-deb not installed")
		}
		for field, want := range map[string]string{
			"Package": "botd", "Architecture": arch, "Version": "1.2.3.test",
			"Depends": "adduser", "Recommends": "ffmpeg, poppler-utils, ca-certificates",
		} {
			out, err := exec.Command("dpkg-deb", "-f", deb, field).Output()
			if got := strings.TrimSpace(string(out)); err != nil || got != want {
				t.Errorf("%s: %q (%v), want %q", field, got, err, want)
			}
		}
		out, err := exec.Command("dpkg-deb", "-c", deb).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{" ./usr/bin/botd\n", " ./lib/systemd/system/botd.service\n", " ./etc/botd/config.yaml\n"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the .deb has no%s", strings.TrimSuffix(want, "\n"))
			}
		}
		conf := debFile(t, deb, "./etc/botd/config.yaml")
		for _, want := range []string{"\ndata_dir: /var/lib/botd/data ", "\ngroups_dir: /var/lib/botd/groups "} {
			if !strings.Contains(conf, want) {
				t.Errorf("/etc/botd/config.yaml lacks %q", strings.TrimSpace(want))
			}
		}
		if strings.Contains(conf, "./data") || strings.Contains(conf, "./groups") {
			t.Error("/etc/botd/config.yaml still names a relative data path")
		}
	})

	t.Run("install", func(t *testing.T) { debInstall(t, deb) })
}

func tarEntries(t *testing.T, path string) map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h.Mode
	}
}

// debFile is one file of the package's data, read with dpkg-deb.
func debFile(t *testing.T, deb, name string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `dpkg-deb --fsys-tarfile "$1" | tar -xOf - "$2"`, "sh", deb, name).Output()
	if err != nil {
		t.Fatalf("%s in %s: %v", name, deb, err)
	}
	return string(out)
}

var webURL = regexp.MustCompile(`^botd web: open (http://127\.0\.0\.1:[0-9]+)/login#token=`)

// debInstall installs the .deb into a throwaway root (packaging/
// debinstall.sh: an overlay of / in a mount namespace of its own) and,
// while the installed botd runs there as botd, asks its web room for the
// login page.
func debInstall(t *testing.T, deb string) {
	if os.Geteuid() != 0 {
		t.Skip("installing a .deb needs root")
	}
	for _, p := range []string{"dpkg", "unshare", "chroot", "setpriv", "systemd-analyze"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed", p)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard only
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "bash", "debinstall.sh", deb, t.TempDir())
	// Its own process group, so a hang kills botd too, not the script alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	served := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		m := webURL.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		checkLoginPage(t, m[1]+"/login")
		served = true
		stdin.Close() // botd may stop; the script goes on to remove and purge
	}
	stdin.Close()
	err = cmd.Wait()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && (ee.ExitCode() == 77 || strings.HasPrefix(stderr.String(), "unshare: ")) {
		t.Skipf("no throwaway root on this machine (a mount namespace with an overlay of /):\n%s", stderr.String())
	}
	if err != nil || !strings.Contains(stderr.String(), "debinstall: ok") {
		t.Fatalf("debinstall.sh: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(lines, "\n"), stderr.String())
	}
	t.Logf("debinstall.sh:\n%s", stderr.String())
	if !served {
		t.Fatalf("botd never printed the web room's address; stdout:\n%s", strings.Join(lines, "\n"))
	}
	version := "botd " + testVersion + " (commit " + testCommit + ", built " + testDate + ","
	found := false
	for _, l := range lines {
		found = found || strings.HasPrefix(l, version)
	}
	if !found {
		t.Errorf("botd version: no line starting %q in\n%s", version, strings.Join(lines, "\n"))
	}
}

func checkLoginPage(t *testing.T, url string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Minute} // a hang guard only
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `action="/login"`) {
		t.Fatalf("GET %s: %s, body:\n%.500s", url, resp.Status, body)
	}
}

// The .deb under a real systemd (packaging/systemdboot.sh: a Debian with
// systemd booted by systemd-nspawn): botd.service starts with all its
// hardening, stays up, and its web room answers. Minutes long (a Debian
// made by mmdebstrap), so only with BOTD_SYSTEMD_TEST=1.
func TestDebUnderSystemd(t *testing.T) {
	if os.Getenv("BOTD_SYSTEMD_TEST") != "1" {
		t.Skip("boots a Debian with systemd: set BOTD_SYSTEMD_TEST=1 (root, mmdebstrap, systemd-container; minutes)")
	}
	for _, p := range []string{"mmdebstrap", "systemd-nspawn", "unshare", "chroot"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("BOTD_SYSTEMD_TEST=1 but %s is not installed (apt-get install mmdebstrap systemd-container)", p)
		}
	}
	dist := buildPackage(t)
	deb := onlyMatch(t, filepath.Join(dist, "botd_*_"+runtime.GOARCH+".deb"))
	dir := t.TempDir()
	if out, err := exec.Command("bash", "systemdboot.sh", deb, dir).CombinedOutput(); err != nil {
		t.Fatalf("systemdboot.sh: %v\n%s", err, out)
	}
	res, err := os.ReadFile(filepath.Join(dir, "result"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("under systemd:\n%s", res)
	for _, want := range []string{
		"login: 200\n", "ActiveState=active\n", "SubState=running\n", "NRestarts=0\n", "User=botd\n",
		"NoNewPrivs:\t1\n", "CapEff:\t0000000000000000\n", "CapBnd:\t0000000000000000\n", "Seccomp:\t2\n",
	} {
		if !strings.Contains(string(res), want) {
			t.Errorf("under systemd: no %q", strings.TrimSpace(want))
		}
	}
}
