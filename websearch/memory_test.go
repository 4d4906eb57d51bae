package websearch_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/botd-dev/botd/websearch"
)

// childEnv names the provider a re-executed test binary searches, and
// tells it it is the child.
const childEnv = "WEBSEARCH_MEMORY_CHILD_URL"

// TestPeakMemoryOfEndlessAnswer measures, in a child process of its own
// (the server stays in this one), the peak RSS of a search whose provider
// never stops answering: bounded by MaxResponseBytes, not by the answer.
func TestPeakMemoryOfEndlessAnswer(t *testing.T) {
	if base := os.Getenv(childEnv); base != "" {
		memoryChild(base)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	if raceEnabled {
		t.Skip("the race detector multiplies memory; run without -race to measure")
	}
	for _, tt := range []struct {
		name, prefix, result string
	}{
		{"many small results", `{"results":[`, `{"url":"https://a.example/","title":"t"},`},
		{"one endless title", `{"results":[{"url":"https://a.example/","title":"`, strings.Repeat("x", 4096)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := serve(t, endlessOf(tt.prefix, tt.result))
			cmd := exec.Command(os.Args[0], "-test.run=^TestPeakMemoryOfEndlessAnswer$")
			cmd.Env = append(os.Environ(), childEnv+"="+base)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var hwm, baseline int
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				fmt.Sscanf(sc.Text(), "baseline_kb %d", &baseline)
				fmt.Sscanf(sc.Text(), "vmhwm_kb %d", &hwm)
			}
			if hwm == 0 || baseline == 0 {
				t.Fatalf("child reported no figures:\n%s", out)
			}
			t.Logf("peak RSS %d KB (%d KB before the search)", hwm, baseline)
			// Twice the bound (the decoder's buffer doubles) and what Go's
			// collector lets stand before it runs: far below an unbounded
			// read, which would grow until the 30 s timeout.
			if grew := hwm - baseline; grew > 6*websearch.MaxResponseBytes>>10 {
				t.Errorf("the search grew RSS by %d KB, more than 6 × MaxResponseBytes", grew)
			}
		})
	}
}

func memoryChild(base string) {
	fmt.Printf("baseline_kb %d\n", vmHWM())
	s, err := websearch.New(websearch.Config{Provider: "searxng", BaseURL: base}, nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	if _, err := s.Search(context.Background(), "q", 5); !errors.Is(err, websearch.ErrFailed) {
		fmt.Println("error: an endless answer was accepted:", err)
		os.Exit(1)
	}
	fmt.Printf("vmhwm_kb %d\n", vmHWM())
}

// vmHWM is this process's peak resident set, in KB, from /proc.
func vmHWM() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}

// endlessOf writes prefix, then body again and again until the client
// hangs up.
func endlessOf(prefix, body string) func(w io.Writer) {
	return func(w io.Writer) {
		fmt.Fprint(w, prefix)
		for {
			if _, err := fmt.Fprint(w, body); err != nil {
				return
			}
		}
	}
}
