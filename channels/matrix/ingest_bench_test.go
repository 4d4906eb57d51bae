package matrix

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"maunium.net/go/mautrix"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// BenchmarkIngest is the receive path of a busy room: a /sync answer
// (JSON, as a homeserver sends it, one event each) decoded by mautrix →
// the event parser → media refs registered → the agent's router stores
// chat and message in SQLite. Three in ten messages carry a photo.
// Reports messages per second.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "botd.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	set, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: ChatID(family), RequiresTrigger: true}})
	if err != nil {
		b.Fatal(err)
	}
	router := agent.New(agent.Options{Store: st, Groups: set, GroupsDir: filepath.Join(dir, "groups"), Log: quiet})
	m := offline(b, router, mediaregistry.New(st.DB, time.Hour))
	bodies := make([][]byte, b.N)
	for i := range bodies {
		content := obj{"msgtype": "m.text", "body": "see you at the station at six, bring the tickets please"}
		if i%10 < 3 {
			content = obj{"msgtype": "m.image", "body": "look at this one", "filename": "IMG_2041.jpg",
				"url": "mxc://matrix.example.org/AbCdEfGhIjKlMnOpQrStUvWx", "info": obj{"mimetype": "image/jpeg", "size": 240000, "w": 1280, "h": 960}}
		}
		ev := obj{"event_id": fmt.Sprintf("$ev%d", i), "type": "m.room.message", "sender": ann,
			"origin_server_ts": time.Now().UnixMilli(), "content": content}
		bodies[i], err = json.Marshal(obj{"next_batch": fmt.Sprintf("s%d", i+1),
			"rooms": obj{"join": obj{family: obj{"timeline": obj{"events": []obj{ev}}}}}})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var resp mautrix.RespSync
		if err := json.Unmarshal(bodies[i], &resp); err != nil {
			b.Fatal(err)
		}
		m.handleSync(ctx, &resp, false)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	var n int
	if err := st.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&n); err != nil || n != b.N {
		b.Fatalf("stored %d of %d messages (%v)", n, b.N, err)
	}
}
