package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config too large to search line by line keeps the parser's line.
func TestSyntaxProblemLargeFileKeepsParserLine(t *testing.T) {
	src := strings.Repeat("# filler line of a long comment\n", maxScanLines) + "channels:\n   web: {}\n  telegram: {}\n"
	_, err := Parse([]byte(src), noEnv)
	if err == nil || !strings.Contains(err.Error(), "invalid YAML near line") {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkSyntaxProblem is the cost of locating a mistake at the end of
// the example config (every line parsed again once).
func BenchmarkSyntaxProblem(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "config.example.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	data = append(data, []byte("channels:\n   web: {}\n  telegram: {}\n")...)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, noEnv); err == nil {
			b.Fatal("no error")
		}
	}
}
