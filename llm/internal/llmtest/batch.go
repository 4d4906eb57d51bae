package llmtest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/botd-dev/botd/llm"
)

// BatchOutcomes renders batch results for a golden file: by custom id,
// the result or the classified error. Every error must be an *llm.Error
// and the API key must not appear.
func BatchOutcomes(t testing.TB, got map[string]llm.BatchOutcome) []byte {
	t.Helper()
	out := make(map[string]GenerateOutcome, len(got))
	for id, o := range got {
		out[id] = GenerateOutcome{Result: o.Result, Error: asErr(t, o.Err)}
	}
	b := Marshal(t, out)
	if bytes.Contains(b, []byte(APIKey)) {
		t.Errorf("API key leaked into the batch results:\n%s", b)
	}
	return b
}

// JSONLines turns a JSONL body (an uploaded batch input file) into an
// indented JSON array for a golden file, keeping the bytes as sent.
func JSONLines(t testing.TB, b []byte) []byte {
	t.Helper()
	var lines [][]byte
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !json.Valid(line) {
			t.Fatalf("line %d is not JSON: %s", i+1, line)
		}
		lines = append(lines, line)
	}
	return Indent(t, append(append([]byte("["), bytes.Join(lines, []byte(","))...), ']'))
}

// Submit submits items and returns the batch id, failing the test on an
// error.
func Submit(t testing.TB, b llm.Batcher, items []llm.BatchItem) string {
	t.Helper()
	id, err := b.SubmitBatch(t.Context(), items)
	if err != nil {
		t.Fatalf("SubmitBatch: %v", err)
	}
	return id
}

// Poll polls batch id, failing the test on an error.
func Poll(t testing.TB, b llm.Batcher, id string) llm.BatchState {
	t.Helper()
	st, err := b.PollBatch(t.Context(), id)
	if err != nil {
		t.Fatalf("PollBatch(%s): %v", id, err)
	}
	return st
}

// ErrorOf returns the *llm.Error in err's chain, failing the test when
// err is nil or unclassified.
func ErrorOf(t testing.TB, err error) *llm.Error {
	t.Helper()
	if err == nil {
		t.Fatal("no error, want an *llm.Error")
	}
	return asErr(t, err)
}
