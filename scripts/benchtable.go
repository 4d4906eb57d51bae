//go:build ignore

// benchtable reads `go test -bench` output on stdin, passes it through,
// and ends with one table of every benchmark and its metrics, so `make
// bench` gives the figures in one place.
//
//	go test -run '^$' -bench . -benchmem ./... | go run scripts/benchtable.go
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// what each benchmark measures, for the table.
var labels = map[string]string{
	"BenchmarkRunDue10k":                                            "scheduler: deliver one due task run among 10k tasks (checks, message, claim)",
	"BenchmarkCronNext":                                             "scheduler: next run of a fixed-hour cron on the wall clock (Europe/Berlin)",
	"BenchmarkIPCRoundTripCached":                                   "IPC round trip, cached 10 KB image (file protocol only)",
	"BenchmarkFetchMediaEndToEnd/cached-10KB":                       "fetch_media end to end, cached 10 KB image (MCP → IPC → host → MCP)",
	"BenchmarkFetchMediaEndToEnd/cached-1MB":                        "fetch_media end to end, cached 1 MB image",
	"BenchmarkFetchMediaEndToEnd/in-process-cached-10KB":            "fetch_media in-process (the built-in agent's path), cached 10 KB image",
	"BenchmarkFetch200MBRSS":                                        "200 MB download into the cache: RSS growth",
	"BenchmarkExtractPDF300Pages/whole-document":                    "text of a 300-page PDF, whole",
	"BenchmarkExtractPDF300Pages/default-budget":                    "text of a 300-page PDF, first 60k characters",
	"BenchmarkExtractPDF300Pages/pages-150-152":                     "text of a 300-page PDF, pages 150-152",
	"BenchmarkTranscriptCacheHit/32KiB":                             "transcript cache hit, 32 KiB voice note",
	"BenchmarkTranscriptCacheHit/16384KiB":                          "transcript cache hit, 16 MiB audio",
	"BenchmarkGroupDayBill":                                         "a busy group's day: botd's tokens against eager baselines",
	"BenchmarkContext10k":                                           "a run's context in a group with 10k stored messages (window, quotes, notes, XML)",
	"BenchmarkSweep100k/under-budget":                               "disk-budget sweep of 100k cached files, under budget",
	"BenchmarkSweep100k/evict-1000":                                 "disk-budget sweep of 100k cached files, evicting 1000",
	"BenchmarkRegistry/register/100000":                             "registry: register one ref (100k in db)",
	"BenchmarkRegistry/get/100000":                                  "registry: scoped get (100k refs)",
	"BenchmarkRegistry/list50/100000":                               "registry: list newest 50 (100k refs)",
	"BenchmarkRegistry/register/1000000":                            "registry: register one ref (1M in db)",
	"BenchmarkRegistry/get/1000000":                                 "registry: scoped get (1M refs)",
	"BenchmarkRegistry/list50/1000000":                              "registry: list newest 50 (1M refs)",
	"BenchmarkFoldText":                                             "LLM stream folding, 1000 text chunks",
	"BenchmarkFoldToolArgs":                                         "LLM stream folding, 1000 tool-argument chunks",
	"BenchmarkPlaceholder/render":                                   "placeholder render",
	"BenchmarkPlaceholder/parse":                                    "placeholder parse",
	"BenchmarkChatlogSearch/sqlite/one-chat":                        "search of 1M stored messages on SQLite, one chat of ten (p50/p99 over rare to commonest words)",
	"BenchmarkChatlogSearch/sqlite/all-chats":                       "search of 1M stored messages on SQLite, all ten chats",
	"BenchmarkChatlogSearch/sqlite/read-around":                     "read_messages around a message among 1M on SQLite",
	"BenchmarkChatlogSearch/sqlite/size":                            "SQLite database size per message, with and without the full-text index",
	"BenchmarkChatlogSearch/postgres/one-chat":                      "search of 1M stored messages on Postgres, one chat of ten",
	"BenchmarkChatlogSearch/postgres/all-chats":                     "search of 1M stored messages on Postgres, all ten chats",
	"BenchmarkChatlogSearch/postgres/read-around":                   "read_messages around a message among 1M on Postgres",
	"BenchmarkChatlogSearch/postgres/size":                          "Postgres messages table size per message, with and without the tsvector column and GIN index",
	"BenchmarkChatMarkLatency":                                      "chat marks: a message stored in botd run to its group's chat.updated written (ms/mark; was 0-1000 ms with the 1 s poll)",
	"BenchmarkChatlogInsert/sqlite/indexed":                         "store one message on SQLite (100k stored), with the full-text index",
	"BenchmarkChatlogInsert/sqlite/unindexed":                       "store one message on SQLite (100k stored), without it",
	"BenchmarkChatlogInsert/postgres/indexed":                       "store one message on Postgres (100k stored), with the tsvector index",
	"BenchmarkChatlogInsert/postgres/unindexed":                     "store one message on Postgres (100k stored), without it",
	"BenchmarkIngest":                                               "Telegram ingest: extractor → refs → SQLite",
	"BenchmarkIngestEncrypted":                                      "Matrix ingest in an encrypted room: Megolm decrypt → parser → refs → SQLite",
	"BenchmarkRunRoundTrips/intake":                                 "agent: database round trips of storing a message that asks for nothing (statements/op, txs/op)",
	"BenchmarkRunRoundTrips/answer":                                 "agent: database round trips of one answered message: intake, run, outbox (statements/op, txs/op)",
	"BenchmarkRunRoundTrips/answer_with_tool":                       "agent: the same with one tool call",
	"BenchmarkRenderConversation30":                                 "prompt XML for 30 messages",
	"BenchmarkLoadAndRender30":                                      "load 30 messages from SQLite + prompt XML",
	"BenchmarkFetchMediaInline10KB":                                 "fetch_media tool handler only, 10 KB image",
	"BenchmarkFetchMediaInline10KBOverIPC":                          "fetch_media over IPC with a stub handler",
	"BenchmarkFetchMediaPreview3000x2000":                           "large-image preview (decode, scale to 1568 px, JPEG)",
	"BenchmarkPreviewPeakRSS/progressive-jpeg-8001x4998":            "image bomb: progressive JPEG 8001×4998 (229 KB) preview, peak RSS of the process",
	"BenchmarkPreviewPeakRSS/png16-interlaced-8001x4998":            "image bomb: interlaced 16-bit PNG 8001×4998 (303 KB) preview, peak RSS",
	"BenchmarkPreviewPeakRSS/jpeg-12mp-4000x3000":                   "12 MP baseline JPEG preview, peak RSS (reference)",
	"BenchmarkPreviewPeakRSS/progressive-jpeg-4000x3000":            "12 MP progressive JPEG preview, peak RSS",
	"BenchmarkPreviewPeakRSS/progressive-jpeg-4000x3000-6-parallel": "six parallel 12 MP progressive previews in one process, peak RSS",
	"BenchmarkHTTPInitializeUnderIdleFlood":                         "HTTP MCP with 1100 idle unauthenticated connections: authorised initialize",
	"BenchmarkWebIngest/text":                                       "web room ingest, text: post → room log → SQLite",
	"BenchmarkWebIngest/photos":                                     "web room ingest, 3 in 10 with a 20 KB photo (upload saved, ref registered)",
	"BenchmarkDashboard10kRuns":                                     "web dashboard page with 10k runs and 3k refs",
	"BenchmarkRoomChips":                                            "web room's tool chips: 50 runs of 1 MB tool results, four polls at once",
}

func main() {
	type row struct{ name, metrics string }
	var rows []row
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Println(line)
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			name = name[:i] // drop the GOMAXPROCS suffix
		}
		var ms []string
		for i := 2; i+1 < len(f); i += 2 {
			ms = append(ms, f[i]+" "+f[i+1])
		}
		rows = append(rows, row{name, strings.Join(ms, ", ")})
	}
	fmt.Println()
	fmt.Println("| benchmark | what | result |")
	fmt.Println("|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s |\n", strings.TrimPrefix(r.name, "Benchmark"), labels[r.name], r.metrics)
	}
}
