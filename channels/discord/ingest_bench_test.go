package discord

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/discord/discordfake"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// BenchmarkIngest is the receive path of a busy channel: MESSAGE_CREATE
// (JSON, as the gateway sends it) → discordgo's event struct → extractor →
// media refs registered → the agent's router stores chat and message in
// SQLite. It enters where the gateway's reader hands an event over; the
// websocket framing itself is left out, as the webhook's HTTP is for
// Telegram. Three in ten messages carry a photo. Reports messages per
// second.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "botd.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	chat := ChatID(discordfake.Channel)
	set, err := groups.NewSet("Andy", []groups.Group{{Folder: "study", Chat: chat, RequiresTrigger: true}})
	if err != nil {
		b.Fatal(err)
	}
	router := agent.New(agent.Options{Store: st, Groups: set, GroupsDir: filepath.Join(dir, "groups"), Log: quiet})
	reg := mediaregistry.New(st.DB, time.Hour)
	dc, err := New(Config{Enabled: true, Token: discordfake.Token, APIURL: "http://127.0.0.1:1/api/v9", GatewayURL: "ws://127.0.0.1:1"},
		channels.Env{Registry: reg, Sink: router, Log: quiet, AssistantName: "Andy"})
	if err != nil {
		b.Fatal(err)
	}
	dc.me = discordgo.User{ID: discordfake.BotUserID, Username: "botd", Bot: true}
	dc.names.put(discordfake.Channel, "#general")
	bodies := make([][]byte, b.N)
	for i := range bodies {
		m := map[string]any{"id": strconv.Itoa(i + 1), "channel_id": discordfake.Channel, "guild_id": discordfake.GuildID,
			"type": 0, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
			"author": map[string]any{"id": discordfake.UserID, "username": "ann", "global_name": "Ann"}}
		if i%10 < 3 {
			m["content"] = "look at this one"
			m["attachments"] = []any{map[string]any{"id": strconv.Itoa(1_000_000 + i), "filename": "IMG_2041.jpg",
				"content_type": "image/jpeg", "size": 240_000, "width": 1280, "height": 960,
				"url": "https://cdn.discordapp.com/attachments/700000000000000001/1/IMG_2041.jpg?ex=6760&is=6750&hm=abcdef0123456789"}}
		} else {
			m["content"] = "see you at the station at six, bring the tickets please"
		}
		if bodies[i], err = json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var ev discordgo.MessageCreate
		if err := json.Unmarshal(bodies[i], &ev); err != nil {
			b.Fatal(err)
		}
		dc.handle(ctx, ev.Message, false)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	var n int
	if err := st.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&n); err != nil || n != b.N {
		b.Fatalf("stored %d of %d messages (%v)", n, b.N, err)
	}
}
