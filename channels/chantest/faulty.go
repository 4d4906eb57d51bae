package chantest

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store"
)

// FaultyStore is a real SQLite store that can be made to refuse writes for
// real: Lock takes the database's write lock on another connection (as a
// second process would), so every write of the store fails with SQLite's
// own "database is locked" after a short busy timeout, until Unlock.
type FaultyStore struct {
	*store.Store
	locker *sql.DB

	mu sync.Mutex
	tx *sql.Tx

	// Refused counts writes StoreLike saw fail.
	Refused atomic.Int64
}

// NewFaultyStore opens a migrated store in a temp dir; it is closed when
// the test ends.
func NewFaultyStore(t testing.TB) *FaultyStore {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "botd.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// Reopen with a busy timeout of milliseconds instead of botd's 10 s:
	// the same refusal, sooner.
	st.Close()
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(20)", "foreign_keys(1)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	locker, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	f := &FaultyStore{Store: &store.Store{DB: db, Dialect: sqldialect.SQLite}, locker: locker}
	t.Cleanup(func() {
		f.Unlock(t)
		locker.Close()
		db.Close()
	})
	return f
}

// Lock makes every write fail until Unlock.
func (f *FaultyStore) Lock(t testing.TB) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tx != nil {
		return
	}
	tx, err := f.locker.Begin() // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatalf("taking the write lock: %v", err)
	}
	f.tx = tx
}

// Unlock lets writes through again.
func (f *FaultyStore) Unlock(t testing.TB) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tx == nil {
		return
	}
	if err := f.tx.Rollback(); err != nil {
		t.Errorf("releasing the write lock: %v", err)
	}
	f.tx = nil
}

// StoreLike returns an OnDeliver for sink that writes what it is given the
// way the router does (the chat row always, the message row for
// registered chats, both upserts), counting refusals in f.Refused.
func (f *FaultyStore) StoreLike(sink *Sink) func(context.Context, channels.Inbound) error {
	return func(ctx context.Context, in channels.Inbound) error {
		err := f.put(ctx, sink, in)
		if err != nil {
			f.Refused.Add(1)
		}
		return err
	}
}

func (f *FaultyStore) put(ctx context.Context, sink *Sink, in channels.Inbound) error {
	if err := f.UpsertChat(ctx, store.Chat{ID: in.ChatID, Name: in.ChatName, IsGroup: in.IsGroup, LastMessageAt: in.Time}); err != nil {
		return err
	}
	if !sink.Registered(in.ChatID) {
		return nil
	}
	_, err := f.PutMessage(ctx, store.Message{
		ChatID: in.ChatID, ID: in.ID, SenderID: in.SenderID, SenderName: in.SenderName,
		Text: in.Text, Time: in.Time, FromMe: in.FromMe, IsBot: in.IsBot, ReplyTo: in.ReplyTo, ThreadID: in.ThreadID,
	})
	return err
}

// Stored returns the ids of the messages stored for chat, in store order,
// each as often as a row holds it.
func (f *FaultyStore) Stored(t testing.TB, chat string) []string {
	t.Helper()
	rows, err := f.DB.Query(`SELECT id FROM messages WHERE chat_id = ? ORDER BY seq`, chat)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}
