package telegram_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/telegram"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// BenchmarkIngest is the receive path of a busy group: update → extractor
// → media refs registered → the agent's router stores chat and message in
// SQLite. Three in ten messages carry a photo. Reports messages per second.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "botd.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	set, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: "telegram:-100", RequiresTrigger: true}})
	if err != nil {
		b.Fatal(err)
	}
	router := agent.New(agent.Options{Store: st, Groups: set, GroupsDir: filepath.Join(dir, "groups"), Log: quiet})
	reg := mediaregistry.New(st.DB, time.Hour)
	tg, err := telegram.New(telegram.Config{Enabled: true, Token: "123:bench", APIURL: "http://127.0.0.1:1"},
		channels.Env{Registry: reg, Sink: router, Log: quiet, AssistantName: "Andy"})
	if err != nil {
		b.Fatal(err)
	}
	me := models.User{ID: 99, IsBot: true, Username: "botd_bot"}
	chat := models.Chat{ID: -100, Type: models.ChatTypeSupergroup, Title: "Family"}
	from := &models.User{ID: 42, FirstName: "Ann"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := &models.Message{ID: i + 1, Chat: chat, From: from, Date: int(time.Now().Unix())}
		if i%10 < 3 {
			m.Photo = []models.PhotoSize{{FileID: "small", Width: 90, Height: 90, FileSize: 1200},
				{FileID: "AgACAgIAAxkBAAIBZ2Vh3x9k2l0AAUPnQ5t8", FileUniqueID: "u", Width: 1280, Height: 960, FileSize: 240_000}}
			m.Caption = "look at this one"
		} else {
			m.Text = "see you at the station at six, bring the tickets please"
		}
		telegram.HandleUpdate(tg, ctx, me, &models.Update{ID: int64(i + 1), Message: m})
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	var n int
	st.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&n)
	if n != b.N {
		b.Fatalf("stored %d of %d messages", n, b.N)
	}
}
