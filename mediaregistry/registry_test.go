package mediaregistry_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store/storetest"
	"os"
	"testing"
	"time"

	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// openStore opens (migrating) the database c names; again is a restart.
func openStore(t testing.TB, c store.Config) *store.Store {
	t.Helper()
	return storetest.Open(t, c)
}

func TestRegistryScopeExpirySweepAndRestart(t *testing.T) {
	storetest.Each(t, testRegistryScopeExpirySweepAndRestart)
}

func testRegistryScopeExpirySweepAndRestart(t *testing.T, db store.Config) {
	ctx := context.Background()
	s := openStore(t, db)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	reg := mediaregistry.New(s.DB, 30*time.Minute)
	reg.SetClock(func() time.Time { return now })

	family := mediaregistry.Chats{"telegram:-100"}
	work := mediaregistry.Chats{"slack:C1"}
	photo := &mediaregistry.MediaReference{Chat: "telegram:-100", MessageID: "7", Kind: mediaregistry.Image, MIME: "image/jpeg",
		FileName: "a.jpg", Size: 1234, Width: 10, Height: 20, Caption: "hi", Private: []byte("file-id-secret")}
	if err := reg.Register(ctx, photo); err != nil {
		t.Fatal(err)
	}
	if photo.Channel != "telegram" || !mediaregistry.ValidRefID(photo.ID) || photo.ID[:3] != "tg_" {
		t.Fatalf("registered ref = %+v", photo)
	}

	got, err := reg.Get(ctx, family, photo.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Private) != "file-id-secret" || got.Width != 10 || got.Caption != "hi" || got.Size != 1234 {
		t.Errorf("Get = %+v", got)
	}
	tests := []struct {
		name  string
		scope mediaregistry.Scope
		id    string
		want  error
	}{
		{"other group", work, photo.ID, mediaregistry.ErrForbidden},
		{"unknown", family, "tg_doesnotexist", mediaregistry.ErrNotFound},
		{"malformed", family, "../../etc", mediaregistry.ErrNotFound},
	}
	for _, tt := range tests {
		if _, err := reg.Get(ctx, tt.scope, tt.id); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}

	// Expired: refused, hidden from List, still forbidden to others, gone after a sweep.
	now = now.Add(31 * time.Minute)
	if _, err := reg.Get(ctx, family, photo.ID); !errors.Is(err, mediaregistry.ErrExpired) {
		t.Errorf("expired Get = %v", err)
	}
	if _, err := reg.Get(ctx, work, photo.ID); !errors.Is(err, mediaregistry.ErrForbidden) {
		t.Errorf("expired Get from other group = %v", err)
	}
	if l, _ := reg.List(ctx, family, mediaregistry.Filter{}); len(l) != 0 {
		t.Errorf("List shows expired refs: %d", len(l))
	}
	fresh := &mediaregistry.MediaReference{Chat: "telegram:-100", Kind: mediaregistry.Voice}
	if err := reg.Register(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	n, err := reg.Sweep(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1", n, err)
	}
	if _, err := reg.Get(ctx, family, photo.ID); !errors.Is(err, mediaregistry.ErrNotFound) {
		t.Errorf("swept ref: %v", err)
	}

	// Restart: close and reopen; the fresh ref is still there.
	s.Close()
	s2 := openStore(t, db)
	reg2 := mediaregistry.New(s2.DB, 30*time.Minute)
	reg2.SetClock(func() time.Time { return now })
	if got, err := reg2.Get(ctx, family, fresh.ID); err != nil || got.Kind != mediaregistry.Voice {
		t.Fatalf("after restart: %+v, %v", got, err)
	}
}

func TestListNewestFirstAndFilter(t *testing.T) { storetest.Each(t, testListNewestFirstAndFilter) }

func testListNewestFirstAndFilter(t *testing.T, db store.Config) {
	ctx := context.Background()
	s := openStore(t, db)
	reg := mediaregistry.New(s.DB, time.Hour)
	base := time.Now()
	kinds := []mediaregistry.Kind{mediaregistry.Image, mediaregistry.Voice, mediaregistry.Image, mediaregistry.Document}
	var ids []string
	for i, k := range kinds {
		r := &mediaregistry.MediaReference{Chat: "whatsapp:1@g.us", Kind: k, Created: base.Add(time.Duration(i) * time.Second)}
		if err := reg.Register(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	reg.Register(ctx, &mediaregistry.MediaReference{Chat: "whatsapp:2@g.us", Kind: mediaregistry.Image})
	scope := mediaregistry.Chats{"whatsapp:1@g.us"}
	all, _ := reg.List(ctx, scope, mediaregistry.Filter{})
	if len(all) != 4 || all[0].ID != ids[3] || all[3].ID != ids[0] {
		t.Errorf("List order wrong: %v", all)
	}
	imgs, _ := reg.List(ctx, scope, mediaregistry.Filter{Kind: mediaregistry.Image, Limit: 1})
	if len(imgs) != 1 || imgs[0].ID != ids[2] {
		t.Errorf("filtered = %v", imgs)
	}
}

// BenchmarkRegistry measures registry operations on a database already
// holding 100k and 1M refs of one group: registering one more, looking one
// up, listing the newest page, and the database bytes each ref costs.
func BenchmarkRegistry(b *testing.B) { storetest.EachB(b, benchmarkRegistry) }

func benchmarkRegistry(b *testing.B, c store.Config) {
	for _, n := range []int{100_000, 1_000_000} {
		ctx := context.Background()
		c := storetest.Config(b, sqldialect.Dialect(c.Driver))
		s := openStore(b, c)
		reg := mediaregistry.New(s.DB, time.Hour)
		ids := fill(b, ctx, reg, n)
		size := dbSize(b, s, c)
		scope := mediaregistry.Chats{"telegram:-100"}
		b.Run(fmt.Sprintf("register/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := reg.Register(ctx, benchRef(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size)/float64(n), "dbbytes/ref")
		})
		b.Run(fmt.Sprintf("get/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := reg.Get(ctx, scope, ids[(i*7919)%len(ids)]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("list50/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				l, err := reg.List(ctx, scope, mediaregistry.Filter{Limit: 50})
				if err != nil || len(l) != 50 {
					b.Fatal(len(l), err)
				}
			}
		})
	}
}

// dbSize is the bytes the database takes on disk: the SQLite file after a
// checkpoint, or what Postgres reports for the database.
func dbSize(b *testing.B, s *store.Store, c store.Config) int64 {
	ctx := context.Background()
	if s.Dialect == sqldialect.Postgres {
		var n int64
		if err := s.DB.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	s.DB.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	fi, err := os.Stat(c.DSN)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

func benchRef(i int) *mediaregistry.MediaReference {
	return &mediaregistry.MediaReference{Chat: "telegram:-100", MessageID: fmt.Sprint(i), Kind: mediaregistry.Image,
		MIME: "image/jpeg", FileName: "IMG_20261121_120000.jpg", Size: 2_400_000, Width: 1280, Height: 960,
		Private: []byte(`{"file_id":"AgACAgIAAxkBAAIBZ2Vh3x9k2l0AAUPnQ5t8Hq2PZ6g7AAIv1DEbx8Q5SJ0bW","file_size":2400000}`)}
}

// fill registers n refs in batches (one transaction per 1000, as an album
// would be) and returns their ids.
func fill(b *testing.B, ctx context.Context, reg *mediaregistry.Registry, n int) []string {
	b.Helper()
	ids := make([]string, 0, n)
	batch := make([]*mediaregistry.MediaReference, 0, 1000)
	for i := 0; i < n; i++ {
		batch = append(batch, benchRef(i))
		if len(batch) == cap(batch) || i == n-1 {
			if err := reg.RegisterAll(ctx, batch...); err != nil {
				b.Fatal(err)
			}
			for _, r := range batch {
				ids = append(ids, r.ID)
			}
			batch = batch[:0]
		}
	}
	return ids
}

func BenchmarkPlaceholder(b *testing.B) {
	ref := &mediaregistry.MediaReference{ID: "tg_k3J9x2Qa7Pxx", Kind: mediaregistry.Image, FileName: "sunset.jpg", Size: 2516582, MIME: "image/jpeg", Caption: "Beautiful sunset"}
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = mediaregistry.Render(ref)
		}
	})
	text := mediaregistry.Render(ref)
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if len(mediaregistry.Parse(text)) != 1 {
				b.Fatal("no placeholder")
			}
		}
	})
}

// Without media.ref_ttl a ref lives as long as its network can serve it;
// with it, every ref lives that long.
func TestRefLifetimePerChannel(t *testing.T) { storetest.Each(t, testRefLifetimePerChannel) }

func testRefLifetimePerChannel(t *testing.T, db store.Config) {
	ctx := context.Background()
	st := openStore(t, db)
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		ttl     time.Duration
		channel string
		want    time.Duration
	}{
		{0, "telegram", 30 * 24 * time.Hour},
		{0, "slack", 30 * 24 * time.Hour},
		{0, "whatsapp", 14 * 24 * time.Hour},
		{time.Hour, "telegram", time.Hour},
		{time.Hour, "whatsapp", time.Hour},
	}
	for _, tt := range tests {
		reg := mediaregistry.New(st.DB, tt.ttl)
		reg.SetClock(func() time.Time { return now })
		ref := &mediaregistry.MediaReference{Channel: tt.channel, Chat: tt.channel + ":1", Kind: mediaregistry.Image, Private: []byte("k")}
		if err := reg.Register(ctx, ref); err != nil {
			t.Fatal(err)
		}
		if got := ref.Expires.Sub(ref.Created); got != tt.want {
			t.Errorf("ttl %v, %s: ref lives %v, want %v", tt.ttl, tt.channel, got, tt.want)
		}
		// A day later a Telegram or Slack ref is still there.
		reg.SetClock(func() time.Time { return now.Add(24 * time.Hour) })
		_, err := reg.Get(ctx, mediaregistry.Chats{ref.Chat}, ref.ID)
		if live := tt.want > 24*time.Hour; live != (err == nil) {
			t.Errorf("ttl %v, %s: a day later Get = %v", tt.ttl, tt.channel, err)
		}
	}
}
