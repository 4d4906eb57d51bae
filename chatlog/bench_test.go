package chatlog_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/chatlog"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

// The figures of docs/performance.md ("Searching the conversation"):
// search over a million messages on both databases (p50 and p99 over a
// mix of rare, common and several-word queries), what the index costs a
// stored message, and the database's size per message with and without
// it. `make bench BENCH=Chatlog` runs them; BOTD_BENCH_MESSAGES changes
// the million (a quick look: 100000).

// corpus is a synthetic chat: words drawn from a 50,000-word vocabulary
// with Zipf's law (as in real text, a few words are everywhere and most
// are rare), 4 to 20 words a message, spread over 10 chats.
type corpus struct {
	vocab []string
	zipf  *rand.Zipf
	r     *rand.Rand
}

const (
	vocabSize  = 50000
	benchChats = 10
)

func newCorpus(seed uint64) *corpus {
	r := rand.New(rand.NewPCG(seed, 1))
	c := &corpus{r: r, zipf: rand.NewZipf(r, 1.1, 2, vocabSize-1)}
	seen := map[string]bool{}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	wr := rand.New(rand.NewPCG(7, 7))
	for len(c.vocab) < vocabSize {
		n := 3 + wr.IntN(8)
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[wr.IntN(len(letters))]
		}
		if w := string(b); !seen[w] {
			seen[w] = true
			c.vocab = append(c.vocab, w)
		}
	}
	return c
}

func (c *corpus) text() string {
	n := 4 + c.r.IntN(17)
	words := make([]string, n)
	for i := range words {
		words[i] = c.vocab[c.zipf.Uint64()]
	}
	return strings.Join(words, " ")
}

func benchMessages(b *testing.B) int {
	if v := os.Getenv("BOTD_BENCH_MESSAGES"); v != "" {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1000 {
			b.Fatalf("BOTD_BENCH_MESSAGES=%q: a number of at least 1000", v)
		}
		return n
	}
	return 1_000_000
}

func chatID(i int) string { return fmt.Sprintf("telegram:-100%02d", i) }

// fill stores n messages of c, round robin over the chats, a second
// apart, in one transaction of multi-row inserts (the triggers or the
// generated column index them as they go in).
func fill(b *testing.B, st *store.Store, c *corpus, n int) {
	b.Helper()
	ctx := context.Background()
	for i := range benchChats {
		if err := st.UpsertChat(ctx, store.Chat{ID: chatID(i), Name: fmt.Sprint("chat ", i), IsGroup: true}); err != nil {
			b.Fatal(err)
		}
	}
	const rows = 500
	tx, err := st.DB.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	one := "(?, ?, ?, ?, ?, ?)"
	head := `INSERT INTO messages(chat_id, id, sender_id, sender_name, text, ts) VALUES `
	full, err := tx.PrepareContext(ctx, head+strings.TrimSuffix(strings.Repeat(one+",", rows), ","))
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	args := make([]any, 0, rows*6)
	flush := func(stmt *sql.Stmt) {
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			b.Fatal(err)
		}
		args = args[:0]
	}
	for i := range n {
		sender := fmt.Sprint("person", i%37)
		args = append(args, chatID(i%benchChats), fmt.Sprint(i), sender, sender, c.text(), t0+int64(i)*1000)
		if len(args) == rows*6 {
			flush(full)
		}
	}
	if len(args) > 0 {
		flush(prepare(b, tx, head+strings.TrimSuffix(strings.Repeat(one+",", len(args)/6), ",")))
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if st.Dialect == sqldialect.Postgres {
		if _, err := st.DB.ExecContext(ctx, `VACUUM ANALYZE messages`); err != nil {
			b.Fatal(err)
		}
	}
}

func prepare(b *testing.B, tx *sql.Tx, q string) *sql.Stmt {
	b.Helper()
	s, err := tx.Prepare(q)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// dropIndex removes migration 19's index from st: the database as it was
// before full-text search.
func dropIndex(b *testing.B, st *store.Store) {
	b.Helper()
	ddl := `DROP TRIGGER messages_fts_insert; DROP TRIGGER messages_fts_delete; DROP TRIGGER messages_fts_update;
		DROP TABLE messages_fts; DROP INDEX messages_chat_ts;`
	if st.Dialect == sqldialect.Postgres {
		ddl = `ALTER TABLE messages DROP COLUMN text_search; DROP INDEX messages_chat_ts;`
	}
	if _, err := st.DB.ExecContext(context.Background(), ddl); err != nil {
		b.Fatal(err)
	}
}

// size is the database's bytes on disk: the SQLite file after a
// checkpoint, or the messages table with its indexes and TOAST on
// Postgres.
func size(b *testing.B, st *store.Store, c store.Config) int64 {
	b.Helper()
	ctx := context.Background()
	if st.Dialect == sqldialect.Postgres {
		var n int64
		if err := st.DB.QueryRowContext(ctx, `SELECT pg_total_relation_size('messages')`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	if _, err := st.DB.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(c.DSN)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// benchQueries are what people search: a rare word, words of middling
// and high frequency, two and three words, a short prefix. Ranks are in
// the Zipf vocabulary (0 is the commonest).
func benchQueries(c *corpus) []string {
	w := func(rank int) string { return c.vocab[rank+2] }
	return []string{
		w(30000), w(5000), w(500), w(50), w(5),
		w(50) + " " + w(500), w(5) + " " + w(5000), w(20) + " " + w(200) + " " + w(2000),
		w(300)[:3],
	}
}

// BenchmarkChatlogSearch: one database of a million messages per driver;
// search of one chat (a tenth of them: a group among others) and of all
// ten chats (a group owning them all), a limit of 20; then its size.
func BenchmarkChatlogSearch(b *testing.B) {
	n := benchMessages(b)
	storetest.EachB(b, func(b *testing.B, cfg store.Config) {
		st := storetest.Open(b, cfg)
		c := newCorpus(1)
		start := time.Now()
		fill(b, st, c, n)
		b.Logf("%s: stored %d messages in %v", st.Dialect, n, time.Since(start).Round(time.Millisecond))
		log := chatlog.New(st)
		ctx := context.Background()
		qs := benchQueries(c)
		all := make([]string, benchChats)
		for i := range all {
			all[i] = chatID(i)
		}
		for _, scope := range []struct {
			name  string
			chats []string
		}{{"one-chat", all[:1]}, {"all-chats", all}} {
			b.Run(scope.name, func(b *testing.B) {
				var lat []time.Duration
				per := make([][]time.Duration, len(qs))
				hits := 0
				for i := 0; b.Loop(); i++ {
					t := time.Now()
					ms, err := log.Search(ctx, chatlog.Query{Chats: scope.chats, Text: qs[i%len(qs)], Limit: 20})
					d := time.Since(t)
					lat = append(lat, d)
					per[i%len(qs)] = append(per[i%len(qs)], d)
					if err != nil {
						b.Fatal(err)
					}
					hits += len(ms)
				}
				if hits == 0 {
					b.Fatal("no query found anything: the corpus or the queries are wrong")
				}
				reportLatency(b, lat)
				var each []string
				for i, ds := range per {
					if len(ds) > 0 {
						slices.Sort(ds)
						each = append(each, fmt.Sprintf("%q %v", qs[i], ds[len(ds)/2].Round(10*time.Microsecond)))
					}
				}
				b.Logf("median of each query: %s", strings.Join(each, ", "))
			})
		}
		// read_messages around a message: the anchor by id, then the
		// messages on each side by the (chat, time) index.
		b.Run("read-around", func(b *testing.B) {
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				t := time.Now()
				ms, err := log.Read(ctx, chatlog.Window{Chats: all[:1], Dir: chatlog.Around, ID: fmt.Sprint((i * 7919 % (n / benchChats)) * benchChats), Limit: 20})
				lat = append(lat, time.Since(t))
				if err != nil || len(ms) < 10 {
					b.Fatalf("read around: %d messages, %v", len(ms), err)
				}
			}
			reportLatency(b, lat)
		})
		var after, before int64
		var once sync.Once
		b.Run("size", func(b *testing.B) {
			once.Do(func() {
				after = size(b, st, cfg)
				dropIndex(b, st)
				if st.Dialect == sqldialect.Postgres {
					_, err := st.DB.ExecContext(ctx, `VACUUM FULL messages`)
					if err != nil {
						b.Fatal(err)
					}
				} else if _, err := st.DB.ExecContext(ctx, `VACUUM`); err != nil {
					b.Fatal(err)
				}
				before = size(b, st, cfg)
			})
			for b.Loop() {
			}
			b.ReportMetric(float64(before)/float64(n), "B/msg-unindexed")
			b.ReportMetric(float64(after)/float64(n), "B/msg-indexed")
			b.ReportMetric(0, "ns/op")
		})
	})
}

// reportLatency reports the median and 99th percentile of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	b.Helper()
	slices.Sort(lat)
	p := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
}

// BenchmarkChatlogInsert: what a stored message costs with the index and
// without it, through the path botd stores every message by (one
// PutMessage a message), into a database already holding 100,000.
func BenchmarkChatlogInsert(b *testing.B) {
	storetest.EachB(b, func(b *testing.B, cfg store.Config) {
		for _, indexed := range []bool{true, false} {
			name := "indexed"
			if !indexed {
				name = "unindexed"
			}
			b.Run(name, func(b *testing.B) {
				var c store.Config
				if cfg.Driver == string(sqldialect.Postgres) {
					c = storetest.Config(b, sqldialect.Postgres)
				} else {
					c = store.Config{Driver: cfg.Driver, DSN: filepath.Join(b.TempDir(), "botd.db")}
				}
				st := storetest.Open(b, c)
				corp := newCorpus(2)
				fill(b, st, corp, 100_000)
				if !indexed {
					dropIndex(b, st)
				}
				ctx := context.Background()
				texts := make([]string, 4096)
				for i := range texts {
					texts[i] = corp.text()
				}
				t0 := time.Now()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					_, err := st.PutMessage(ctx, store.Message{ChatID: chatID(i % benchChats), ID: fmt.Sprint("new", i), SenderID: "x",
						SenderName: "X", Text: texts[i%len(texts)], Time: t0.Add(time.Duration(i) * time.Second)})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}
