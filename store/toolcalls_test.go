package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRecentRunTools(t *testing.T) { drivers(t, testRecentRunTools) }

// testRecentRunTools: what is kept of each call is its name, the start
// of its arguments and of its result's text (white space made one
// space), its string arguments; a result goes with the newest call of its
// id; a run whose assistant called no tool has none; runs are newest
// first, of the folder asked, at most limit.
func testRecentRunTools(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	longURL := "https://example.org/" + strings.Repeat("é", 3000)
	page := strings.Repeat("tide  \n\t table ", 100_000) // 1.5 MB of a page's text
	call := func(id, name string, args any) string {
		a, _ := json.Marshal(args)
		return fmt.Sprintf(`{"kind":"tool_call","tool_call":{"id":%q,"name":%q,"args":%s}}`, id, name, a)
	}
	result := func(id string, failed bool, texts ...string) string {
		var content []string
		for _, tx := range texts {
			b, _ := json.Marshal(tx)
			content = append(content, `{"kind":"text","text":`+string(b)+`}`, `{"kind":"media","media":{"path":"x.png"}}`)
		}
		return fmt.Sprintf(`{"kind":"tool_result","tool_result":{"call_id":%q,"is_error":%v,"content":[%s]}}`, id, failed, strings.Join(content, ","))
	}
	entries := func(parts ...string) []TranscriptEntry {
		var es []TranscriptEntry
		for i, p := range parts {
			role := "assistant"
			if i%2 == 1 {
				role = "tool"
			}
			es = append(es, TranscriptEntry{Role: role, Parts: json.RawMessage("[" + p + "]")})
		}
		return es
	}
	for i, r := range []struct {
		id, folder string
		entries    []TranscriptEntry
	}{
		{"r1", "main", entries(
			`{"kind":"text","text":"let me look"},`+call("1", "fetch_url", map[string]any{"url": longURL, "max": 3})+`,`+call("2", "web_search", map[string]string{"query": "  tides "}),
			result("1", false, page, "and more")+`,`+result("2", true, "search failed"),
			call("1", "fetch_media", map[string]string{"mediaRef": "tg_abc"}),
			`{"kind":"text","text":"no result for this one"}`)},
		{"r2", "main", entries(`{"kind":"text","text":"just an answer"}`)},
		{"r3", "main", entries(`not json`, result("9", false, "a result of no call"))},
		{"r4", "family", entries(call("1", "remember", map[string]string{"note": "x"}))},
		{"r5", "main", []TranscriptEntry{{Role: "tool", Parts: json.RawMessage("[" + call("1", "", map[string]string{}) + "]")}}},
		{"r6", "main", entries(call("1", "list_media", map[string]string{}))},
	} {
		started := day.Add(time.Duration(i) * time.Minute)
		if err := s.SaveRun(ctx, AgentRun{ID: r.id, Folder: r.folder, Started: started, Finished: started.Add(time.Second), Outcome: "answered"}, r.entries); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.RecentRunTools(ctx, "main", 4)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if !reflect.DeepEqual(ids, []string{"r6", "r5", "r3", "r2"}) {
		t.Fatalf("runs %v, want r6 r5 r3 r2 (newest first, main's, 4)", ids)
	}
	if want := []ToolCall{{Name: "list_media", Args: "{}"}}; !reflect.DeepEqual(got[0].Calls, want) {
		t.Errorf("r6 calls %+v, want %+v", got[0].Calls, want)
	}
	for _, r := range got[1:] {
		if r.Calls != nil {
			t.Errorf("%s: calls %+v, want none (no tool the assistant called by name)", r.ID, r.Calls)
		}
	}
	if !got[0].Started.Equal(day.Add(5*time.Minute)) || !got[0].Finished.Equal(day.Add(5*time.Minute+time.Second)) {
		t.Errorf("r6 span %v – %v", got[0].Started, got[0].Finished)
	}

	all, err := s.RecentRunTools(ctx, "main", 50)
	if err != nil || len(all) != 5 {
		t.Fatalf("main's runs: %d, %v", len(all), err)
	}
	r1 := all[4].Calls
	if all[4].ID != "r1" || len(r1) != 3 {
		t.Fatalf("r1: %s %+v", all[4].ID, r1)
	}
	urlArgs, _ := json.Marshal(map[string]any{"url": longURL, "max": 3})
	if r1[0].Name != "fetch_url" || r1[0].Args != string([]rune(string(urlArgs))[:ToolClipRunes]) ||
		!reflect.DeepEqual(r1[0].Fields, map[string]string{"url": string([]rune(longURL)[:ToolFieldRunes])}) {
		t.Errorf("fetch_url call: name %q, args %d runes, fields %v", r1[0].Name, len([]rune(r1[0].Args)), r1[0].Fields)
	}
	if want := strings.Repeat("tide table ", 47)[:ToolClipRunes]; r1[0].Result != want || r1[0].Failed {
		t.Errorf("fetch_url result %q failed %v, want %q", r1[0].Result, r1[0].Failed, want)
	}
	if want := (ToolCall{Name: "web_search", Args: `{"query":"  tides "}`, Fields: map[string]string{"query": "  tides "}, Result: "search failed", Failed: true}); !reflect.DeepEqual(r1[1], want) {
		t.Errorf("web_search %+v, want %+v", r1[1], want)
	}
	if want := (ToolCall{Name: "fetch_media", Args: `{"mediaRef":"tg_abc"}`, Fields: map[string]string{"mediaRef": "tg_abc"}}); !reflect.DeepEqual(r1[2], want) {
		t.Errorf("fetch_media (its id reused, no result of its own) %+v, want %+v", r1[2], want)
	}
	if other, err := s.RecentRunTools(ctx, "nobody", 50); err != nil || len(other) != 0 {
		t.Errorf("a folder without runs: %v, %v", other, err)
	}

	// A run's calls go with it.
	if _, err := s.PruneAgentHistory(ctx, day.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM agent_tool_calls`).Scan(&left); err != nil || left != 3 {
		t.Errorf("%d kept calls after the pruning (want r4's, r5's and r6's), %v", left, err)
	}
}

func TestRecentRunToolsKeepsOldRuns(t *testing.T) { drivers(t, testRecentRunToolsKeepsOldRuns) }

// testRecentRunToolsKeepsOldRuns: a run recorded before calls were kept
// has them kept on first read, once however many read at once, the same
// as a run recorded now.
func testRecentRunToolsKeepsOldRuns(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	now := time.UnixMilli(time.Now().UnixMilli())
	es := []TranscriptEntry{
		{Role: "assistant", Parts: json.RawMessage(`[{"kind":"tool_call","tool_call":{"id":"a","name":"fetch_url","args":{"url":"https://example.org/x"}}}]`)},
		{Role: "tool", Parts: json.RawMessage(`[{"kind":"tool_result","tool_result":{"call_id":"a","content":[{"kind":"text","text":"` + strings.Repeat("word ", 1000) + `"}]}}]`)},
	}
	for _, id := range []string{"new", "old"} {
		if err := s.SaveRun(ctx, AgentRun{ID: id, Folder: "main", Started: now, Finished: now.Add(time.Second)}, es); err != nil {
			t.Fatal(err)
		}
	}
	// "old" as a build before schema 24 left it.
	if _, err := s.DB.ExecContext(ctx, `DELETE FROM agent_tool_calls WHERE run_id = 'old'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.ExecContext(ctx, `UPDATE agent_runs SET tool_calls_kept = 0 WHERE id = 'old'`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	reads := make([][]RunTools, 4)
	errs := make([]error, 4)
	for i := range reads {
		wg.Go(func() { reads[i], errs[i] = s.RecentRunTools(ctx, "main", 10) })
	}
	wg.Wait()
	for i, got := range reads {
		if errs[i] != nil || len(got) != 2 {
			t.Fatalf("read %d: %+v, %v", i, got, errs[i])
		}
		if !reflect.DeepEqual(got[0].Calls, got[1].Calls) || len(got[0].Calls) != 1 || got[0].Calls[0].Result != strings.TrimSpace(strings.Repeat("word ", 103))[:ToolClipRunes] {
			t.Errorf("read %d: old %+v, new %+v", i, got[0].Calls, got[1].Calls)
		}
	}
	var n int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM agent_tool_calls WHERE run_id = 'old'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("old run's calls kept %d times, %v", n, err)
	}
}

// TestWordClip: the clip of a result is what collapsing the whole of it
// and then clipping gives (strings.Fields' words joined by spaces, its
// first ToolClipRunes runes), without copying the whole.
func TestWordClip(t *testing.T) {
	long := strings.Repeat("ab ", ToolClipRunes)
	cases := [][]string{
		nil,
		{""},
		{"   "},
		{"a"},
		{" \t a \n\n b\u00a0c\u0085d\u2003e  "},
		{"one", "two", "", "  three  "},
		{"bad \xff\xfe bytes", "\xffx"},
		{strings.Repeat("é", ToolClipRunes+3)},
		{strings.Repeat("x", ToolClipRunes-1), "  y"},
		{strings.Repeat("x", ToolClipRunes), "  y"},
		{strings.Repeat("x", ToolClipRunes-1) + " ", "y"},
		{long, long},
		{strings.Repeat(" ", 1<<20) + "late"},
	}
	seed := uint32(7)
	for n := 0; n < 200; n++ { // texts of words, white space of every kind and invalid bytes
		var texts []string
		for range n%4 + 1 {
			var b strings.Builder
			for range n * 7 {
				seed = seed*1664525 + 1013904223
				b.WriteString([]string{"w", "é", " ", "\t", "\n", "\u00a0", "\u3000", "\xff", "word"}[seed>>28%9])
			}
			texts = append(texts, b.String())
		}
		cases = append(cases, texts)
	}
	for i, texts := range cases {
		want := clipRunes(strings.Join(strings.Fields(strings.Join(texts, " ")+" "), " "), ToolClipRunes)
		var w wordClip
		for _, s := range texts {
			if w.write(s) {
				break
			}
		}
		if got := w.b.String(); got != want {
			t.Errorf("case %d: %q, want %q", i, got, want)
		}
	}
}
