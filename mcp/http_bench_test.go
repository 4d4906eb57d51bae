package mcp

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkHTTPInitializeUnderIdleFlood is the attack with the
// default limits: 1100 connections without a token are held open (half
// sent a request, answered 401, half never sent anything) against a
// server with 1024 files to open, and each operation is an authorised
// initialize on a new connection, so it has to get through accept like
// any new client.
func BenchmarkHTTPInitializeUnderIdleFlood(b *testing.B) {
	const flood = 1100
	limitOpenFiles(b, flood+1024) // the flood's own ends live in this process too
	dir := b.TempDir()
	srv, err := NewServer(Options{GroupDir: dir, Caller: instantHost{}, Version: "bench", Log: testLoggerB()})
	if err != nil {
		b.Fatal(err)
	}
	h, err := NewHTTPHandler(HTTPOptions{
		Addr:    "127.0.0.1:8765",
		Tokens:  map[string]string{tokFamily: "family"},
		Servers: map[string]*Server{"family": srv},
		Log:     testLoggerB(),
	})
	if err != nil {
		b.Fatal(err)
	}
	addr := serveLoopback(b, h)
	url := "http://" + addr + HTTPPath

	openFlood(b, addr, flood)

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	lat := make([]time.Duration, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokFamily)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatalf("authorised initialize under the flood: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if resp.StatusCode != 200 {
			b.Fatalf("authorised initialize under the flood: status %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
