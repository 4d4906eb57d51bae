package telegram_test

import (
	"github.com/botd-dev/botd/store/storetest"

	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// BenchmarkIngest is the receive path of a busy group: update (JSON, as
// the Bot API sends it) → extractor → media refs registered → the agent's
// router stores chat and message (SQLite, then Postgres). It enters through the webhook
// handler, the one entry point outside package telegram. Three in ten
// messages carry a photo. Reports messages per second.
func BenchmarkIngest(b *testing.B) { storetest.EachB(b, benchmarkIngest) }

func benchmarkIngest(b *testing.B, db store.Config) {
	const secret = "bench-secret"
	ctx := context.Background()
	dir := b.TempDir()
	st := storetest.Open(b, db)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	set, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: "telegram:-100", RequiresTrigger: true}})
	if err != nil {
		b.Fatal(err)
	}
	router := agent.New(agent.Options{Store: st, Groups: set, GroupsDir: filepath.Join(dir, "groups"), Log: quiet})
	reg := mediaregistry.New(st.DB, time.Hour)
	tg, err := telegram.New(telegram.Config{Enabled: true, Token: "123:bench", APIURL: "http://127.0.0.1:1",
		Webhook: &telegram.Webhook{Listen: "127.0.0.1:0", URL: "https://bench.invalid/hook", Secret: secret}},
		channels.Env{Registry: reg, Sink: router, Log: quiet, AssistantName: "Andy"})
	if err != nil {
		b.Fatal(err)
	}
	hook := tg.WebhookHandler()
	chat := models.Chat{ID: -100, Type: models.ChatTypeSupergroup, Title: "Family"}
	from := &models.User{ID: 42, FirstName: "Ann"}
	bodies := make([][]byte, b.N)
	for i := range bodies {
		m := &models.Message{ID: i + 1, Chat: chat, From: from, Date: int(time.Now().Unix())}
		if i%10 < 3 {
			m.Photo = []models.PhotoSize{{FileID: "small", Width: 90, Height: 90, FileSize: 1200},
				{FileID: "AgACAgIAAxkBAAIBZ2Vh3x9k2l0AAUPnQ5t8", FileUniqueID: "u", Width: 1280, Height: 960, FileSize: 240_000}}
			m.Caption = "look at this one"
		} else {
			m.Text = "see you at the station at six, bring the tickets please"
		}
		if bodies[i], err = json.Marshal(models.Update{ID: int64(i + 1), Message: m}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(bodies[i]))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		rec := httptest.NewRecorder()
		hook.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("update %d: status %d", i+1, rec.Code)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	var n int
	if err := st.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&n); err != nil || n != b.N {
		b.Fatalf("stored %d of %d messages (%v)", n, b.N, err)
	}
}
