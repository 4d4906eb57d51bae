package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/store"
)

// BenchmarkRoomChips is what a room's tool chips cost to serve: a room
// whose 50 answers each come from a run that read four pages of 256 KB
// (1 MB of tool results a run, 50 MB in all), polled by four pages at
// once (GET /r/main/tools, which any guest of the room may send at will).
// "kept" reads what SaveRun kept of each call; "old-runs-first-read" the
// same runs as recorded before that (the first read keeps them).
// Reports the milliseconds a round of four polls takes and the peak of
// the live heap while they run, above the heap before, sampled every
// 200 µs through runtime/metrics (a sample can miss a peak by less than
// what 200 µs of allocation adds, never invent one).
func BenchmarkRoomChips(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	page := strings.Repeat("tide tables and harbour notices, ", 256<<10/33)
	for i := 0; i < 50; i++ {
		var calls, results []map[string]any
		for c := 0; c < 4; c++ {
			id := fmt.Sprintf("c%d", c)
			calls = append(calls, map[string]any{"kind": "tool_call", "tool_call": map[string]any{"id": id, "name": "fetch_url",
				"args": map[string]string{"url": fmt.Sprintf("https://example.org/run%d/page%d", i, c)}}})
			results = append(results, map[string]any{"kind": "tool_result", "tool_result": map[string]any{"call_id": id,
				"content": []any{map[string]any{"kind": "text", "text": page}}}})
		}
		callJS, _ := json.Marshal(calls)
		resultJS, _ := json.Marshal(results)
		// The run's span holds its answer's time: the answer is sent
		// inside it, and the next run starts a millisecond later.
		started := time.Now().Truncate(time.Millisecond)
		if _, err := r.w.Send(ctx, channels.OutMessage{Chat: "web:main", Text: fmt.Sprintf("answer %d", i)}); err != nil {
			b.Fatal(err)
		}
		finished := time.Now().Truncate(time.Millisecond).Add(time.Millisecond)
		if err := r.st.SaveRun(ctx, store.AgentRun{ID: fmt.Sprintf("run-%02d", i), Folder: "main", Started: started, Finished: finished,
			Outcome: "answered", Iterations: 2}, []store.TranscriptEntry{{Role: "assistant", Parts: callJS}, {Role: "tool", Parts: resultJS}}); err != nil {
			b.Fatal(err)
		}
		for !time.Now().After(finished) { // the next run's span starts after this one's
			runtime.Gosched()
		}
	}
	cookies := r.cookies // the admin's session; polls read them at once
	poll := func() {
		req := httptest.NewRequest(http.MethodGet, "/r/main/tools?seq=0", nil)
		req.Host = "127.0.0.1"
		for _, c := range cookies {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		r.h.ServeHTTP(rec, req)
		var got struct {
			Chips   map[string][]struct{ Label, Result string }
			Pending bool
		}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
			b.Fatalf("tools: %d %s", rec.Code, rec.Body.String())
		}
		if len(got.Chips) != 50 || got.Pending {
			b.Fatalf("chips of %d answers (want 50), pending %v", len(got.Chips), got.Pending)
		}
		for _, cs := range got.Chips {
			if len(cs) != 4 || !strings.HasPrefix(cs[0].Label, "read example.org") || !strings.HasSuffix(cs[0].Result, "…") {
				b.Fatalf("chips %+v", cs)
			}
		}
	}
	poll()
	for _, tc := range []struct {
		name string
		old  bool
	}{{"kept", false}, {"old-runs-first-read", true}} {
		b.Run(tc.name, func(b *testing.B) { measureChips(b, r, poll, tc.old) })
	}
}

// measureChips runs b.N rounds of four polls at once and reports their
// time and the live heap's peak. old makes every run one recorded before
// its calls were kept (schema 24) before each round: the round keeps
// them, reading each transcript an entry at a time.
func measureChips(b *testing.B, r *rig, poll func(), old bool) {
	forget := func() {
		if !old {
			return
		}
		for _, q := range []string{`DELETE FROM agent_tool_calls`, `UPDATE agent_runs SET tool_calls_kept = 0`} {
			if _, err := r.st.DB.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
	}
	runtime.GC()
	debug.FreeOSMemory()
	// The process's peak resident set from here on: Linux resets VmHWM
	// to the current RSS on "5" (proc(5), clear_refs).
	rssReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	rssBase := procStatusKB("VmRSS")
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		forget()
		b.StartTimer()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(poll)
		}
		wg.Wait()
	}
	b.StopTimer()
	close(done)
	<-sampled
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/4polls")
	b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "peak-heap-MB")
	if hwm := procStatusKB("VmHWM"); rssReset && hwm > 0 {
		b.ReportMetric(float64(hwm)/1024, "peak-rss-MB")
		b.ReportMetric(float64(rssBase)/1024, "rss-before-MB")
	}
}

// procStatusKB is a "kB" line of /proc/self/status (VmRSS, VmHWM), 0
// where there is none.
func procStatusKB(key string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
