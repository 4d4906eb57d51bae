package packaging

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/botd-dev/botd/internal/testwait"
)

// instruction is one line of a Containerfile, continuations joined.
type instruction struct {
	cmd, args string
	line      int
}

var knownInstructions = []string{"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
	"VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}

func containerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open("../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		cont := strings.HasSuffix(line, `\`)
		cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
		if cont {
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args), start})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur.Len() > 0 {
		t.Fatalf("Containerfile:%d: ends inside a continued line", start)
	}
	return out
}

// The Containerfile is well formed and builds what the issue asks for:
// multi-stage, ffmpeg and poppler inside, botd as a non-root user, the
// data in a volume, the config in /etc/botd. (`make image` builds it;
// that is too slow for the test suite: see the README's Install.)
func TestContainerfile(t *testing.T) {
	ins := containerfile(t)
	var stages [][]instruction
	for _, in := range ins {
		if !slices.Contains(knownInstructions, in.cmd) {
			t.Errorf("Containerfile:%d: unknown instruction %q", in.line, in.cmd)
		}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		} else if len(stages) == 0 && in.cmd != "ARG" {
			t.Errorf("Containerfile:%d: %s before the first FROM", in.line, in.cmd)
		}
		if len(stages) > 0 {
			stages[len(stages)-1] = append(stages[len(stages)-1], in)
		}
		if in.cmd == "ADD" && strings.Contains(in.args, "://") {
			t.Errorf("Containerfile:%d: ADD of a URL (unpinned download)", in.line)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and the image", len(stages))
	}
	final := stages[len(stages)-1]
	args := func(cmd string) []string {
		var out []string
		for _, in := range final {
			if in.cmd == cmd {
				out = append(out, in.args)
			}
		}
		return out
	}
	users := args("USER")
	if len(users) == 0 {
		t.Error("the image runs as root: no USER")
	} else if u := strings.Split(users[len(users)-1], ":")[0]; u == "root" || u == "0" {
		t.Errorf("USER %s: the image must not run as root", users[len(users)-1])
	}
	if v := args("VOLUME"); len(v) != 1 || !strings.Contains(v[0], "/var/lib/botd") {
		t.Errorf("VOLUME = %q, want /var/lib/botd", v)
	}
	run := strings.Join(args("RUN"), " ")
	for _, pkg := range []string{"ffmpeg", "poppler-utils", "ca-certificates"} {
		if !regexp.MustCompile(`apt-get install[^&]*\b` + pkg + `\b`).MatchString(run) {
			t.Errorf("the image does not install %s", pkg)
		}
	}
	copies := strings.Join(args("COPY"), "\n")
	for _, want := range []string{"--from=build /out/botd /usr/bin/botd", "/etc/botd/config.yaml"} {
		if !strings.Contains(copies, want) {
			t.Errorf("no COPY %s in the image stage", want)
		}
	}
	if e := args("ENTRYPOINT"); len(e) != 1 || !strings.Contains(e[0], `"/usr/bin/botd"`) {
		t.Errorf("ENTRYPOINT = %q, want it to exec /usr/bin/botd", e)
	}
	build := stages[0]
	if !strings.Contains(strings.Join(func() []string {
		var s []string
		for _, in := range build {
			s = append(s, in.args)
		}
		return s
	}(), " "), "-tags goolm") {
		t.Error("the build stage does not build with -tags goolm")
	}
}

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Profiles    []string          `yaml:"profiles"`
		Ports       []string          `yaml:"ports"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
	} `yaml:"services"`
}

// compose.yaml: botd alone by default, PostgreSQL with a second instance
// and SearXNG behind profiles, the web room on the host's loopback, and
// every variable the image's config needs passed through. Validated by
// docker-compose or podman compose where one that has `config` is
// installed.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	profiles := map[string][]string{}
	for name, s := range c.Services {
		if len(s.Profiles) == 0 {
			profiles[""] = append(profiles[""], name)
		}
		for _, p := range s.Profiles {
			profiles[p] = append(profiles[p], name)
		}
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %q beyond the host's loopback", name, p)
			}
		}
	}
	for p, want := range map[string][]string{"": {"botd"}, "postgres": {"botd-2", "postgres"}, "search": {"searxng"}} {
		got := profiles[p]
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("profile %q runs %v, want %v", p, got, want)
		}
	}
	botd := c.Services["botd"]
	if !slices.Contains(botd.Volumes, "botd-data:/var/lib/botd") {
		t.Errorf("botd's volumes %v: no botd-data:/var/lib/botd", botd.Volumes)
	}
	if c.Services["botd-2"].Environment["BOTD_INSTANCE_ID"] == botd.Environment["BOTD_INSTANCE_ID"] {
		t.Error("the two instances share an instance_id")
	}
	// Every variable the image's config reads without a default comes
	// from compose (the image itself sets the web room's two).
	out, err := exec.Command("../scripts/installed-config.sh", "../config.example.yaml").Output()
	if err != nil {
		t.Fatalf("installed-config.sh: %v", err)
	}
	imageEnv := []string{"BOTD_WEB_LISTEN", "BOTD_WEB_ALLOW_REMOTE"}
	ref := regexp.MustCompile(`\$\{([A-Z0-9_]+)\}`)
	for _, line := range strings.Split(string(out), "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, m := range ref.FindAllStringSubmatch(line, -1) {
			if _, ok := botd.Environment[m[1]]; !ok && !slices.Contains(imageEnv, m[1]) {
				t.Errorf("the image's config reads ${%s}; compose.yaml does not pass it", m[1])
			}
		}
	}

	tool := composeTool()
	if tool == nil {
		t.Skip("no compose with `config` installed (apt-get install docker-compose): checked compose.yaml's structure only")
	}
	for _, p := range [][]string{nil, {"--profile", "postgres", "--profile", "search"}} {
		args := append(append(slices.Clone(tool[1:]), "-f", "../compose.yaml"), p...)
		cmd := exec.Command(tool[0], append(args, "config", "-q")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s config %v: %v\n%s", tool, p, err, out)
		}
	}
}

// composeTool is a compose that can validate a file: docker compose (v2),
// docker-compose (v1, Debian's package) or podman compose with a provider
// that has config.
func composeTool() []string {
	for _, c := range [][]string{{"docker", "compose"}, {"docker-compose"}, {"podman", "compose"}} {
		if _, err := exec.LookPath(c[0]); err != nil {
			continue
		}
		// A docker without the compose plugin prints its own help (exit 0);
		// podman-compose 1.0 has no config at all.
		out, err := exec.Command(c[0], append(slices.Clone(c[1:]), "config", "--help")...).CombinedOutput()
		if err == nil && strings.Contains(string(out), "--quiet") {
			return c
		}
	}
	return nil
}

// make image, then the image run with podman serves the login page on a
// mapped port. Minutes long (the Debian base and the Go build the first
// time), so only with BOTD_IMAGE_TEST=1; the README's Install says how.
func TestImage(t *testing.T) {
	if os.Getenv("BOTD_IMAGE_TEST") != "1" {
		t.Skip("builds the container image: set BOTD_IMAGE_TEST=1 (needs podman; minutes)")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("BOTD_IMAGE_TEST=1 but podman is not installed (apt-get install podman buildah mmdebstrap runc)")
	}
	build := exec.Command("make", "-C", "..", "image", "VERSION=imagetest")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	out, err := exec.Command("podman", "images", "--format", "{{.Repository}}:{{.Tag}}").Output()
	if err != nil || !strings.Contains(string(out), "botd:imagetest") {
		t.Fatalf("podman images does not list botd:imagetest: %v\n%s", err, out)
	}
	image := "localhost/botd:imagetest"
	// Where crun refuses (cgroups v1) or the default ulimits exceed the
	// machine's hard limits, runc with lower ones works (containers.md).
	// A name of its own, so a container created but not started (podman
	// run failing) is removed too.
	name := fmt.Sprintf("botd-imagetest-%d", os.Getpid())
	runs := [][]string{
		{"run", "-d", "--name", name, "-p", "127.0.0.1::8080", "-p", "127.0.0.1::9464", image},
		{"--runtime", "runc", "run", "-d", "--name", name, "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096", "-p", "127.0.0.1::8080", "-p", "127.0.0.1::9464", image},
	}
	var errs []string
	started := false
	for _, args := range runs {
		_, err := exec.Command("podman", args...).Output()
		if err == nil {
			started = true
			break
		}
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			errs = append(errs, string(ee.Stderr))
		}
		_ = exec.Command("podman", "rm", "-f", name).Run()
	}
	if !started {
		t.Fatalf("podman run: %s", strings.Join(errs, "\n"))
	}
	id := name
	t.Cleanup(func() { _ = exec.Command("podman", "rm", "-f", "-t", "5", id).Run() })
	port, err := exec.Command("podman", "port", id, "8080").Output()
	if err != nil {
		t.Fatalf("podman port: %v", err)
	}
	addr := strings.TrimSpace(strings.SplitN(string(port), "\n", 2)[0])
	// botd prints the address once it listens: wait on that line.
	testwait.Until(t, "botd in the container prints the web room's address", func() bool {
		logs, _ := exec.Command("podman", "logs", id).CombinedOutput()
		return strings.Contains(string(logs), "botd web: open ")
	})
	checkLoginPage(t, "http://"+addr+"/login")
	ops, err := exec.Command("podman", "port", id, "9464").Output()
	if err != nil {
		t.Fatalf("podman port 9464: %v", err)
	}
	opsAddr := strings.TrimSpace(strings.SplitN(string(ops), "\n", 2)[0])
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": `"ready":true`} {
		resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + opsAddr + path)
		if err != nil {
			t.Fatalf("GET %s on the mapped port: %v", path, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s on the mapped port: %s %q", path, resp.Status, body)
		}
	}
	user, err := exec.Command("podman", "exec", id, "id", "-u").Output()
	if err != nil || strings.TrimSpace(string(user)) == "0" {
		t.Errorf("botd runs as uid %q (%v), want non-root", user, err)
	}
	for _, tool := range []string{"ffmpeg", "pdftoppm"} {
		if err := exec.Command("podman", "exec", id, "sh", "-c", "command -v "+tool).Run(); err != nil {
			t.Errorf("%s is not in the image", tool)
		}
	}
}
