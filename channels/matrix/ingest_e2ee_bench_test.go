//go:build goolm

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
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// BenchmarkIngestEncrypted is BenchmarkIngest in an end-to-end encrypted
// room: every event is m.room.encrypted, decrypted by the real Olm
// machine (Megolm, its replay check in the crypto store) before the same
// parser, registry and router. The sender's room key is in the bot's
// store, as a to-device room key would have put it. Reports messages
// per second.
func BenchmarkIngestEncrypted(b *testing.B) {
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
	eng := offlineCrypto(b, m).(*olmEngine)
	m.crypto = eng

	ogs, err := crypto.NewOutboundGroupSession(family, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ogs.MaxMessages = 1 << 30
	ogs.Shared = true // as if the room key had gone out to the bot's device
	const senderKey = id.SenderKey("NLOkLUsuqhkAzCMXjOepZAovV2jS+NJqag/Bv6tDB2s")
	igs, err := crypto.NewInboundGroupSession(senderKey, "MHgeJUapU5A5r06mdjOZXagBdfXrwHzmZH3n8MKUS3A", family,
		ogs.Internal.Key(), 24*time.Hour, 1<<30, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	if err := eng.mach.CryptoStore.PutGroupSession(ctx, igs); err != nil {
		b.Fatal(err)
	}
	bodies := make([][]byte, b.N)
	for i := range bodies {
		content := obj{"msgtype": "m.text", "body": "see you at the station at six, bring the tickets please"}
		if i%10 < 3 {
			content = obj{"msgtype": "m.image", "body": "look at this one", "filename": "IMG_2041.jpg",
				"file": obj{"v": "v2", "url": "mxc://matrix.example.org/AbCdEfGhIjKlMnOpQrStUvWx",
					"key": obj{"kty": "oct", "alg": "A256CTR", "ext": true, "key_ops": []string{"encrypt", "decrypt"}, "k": "qcHVMSgYg-71CauWBezXI5qkaRb0LuIy-Wx5kIaHMIA"},
					"iv":  "X85+XgHN+HEAAAAAAAAAAA", "hashes": obj{"sha256": "5qG4fFnbbVdlAB1Q72JDKwCagV6Dbkx9uds4rSak37c"}},
				"info": obj{"mimetype": "image/jpeg", "size": 240000, "w": 1280, "h": 960}}
		}
		plain, err := json.Marshal(obj{"room_id": family, "type": "m.room.message", "content": content})
		if err != nil {
			b.Fatal(err)
		}
		ct, err := ogs.Encrypt(plain)
		if err != nil {
			b.Fatal(err)
		}
		ev := obj{"event_id": fmt.Sprintf("$ev%d", i), "type": "m.room.encrypted", "sender": ann,
			"origin_server_ts": time.Now().UnixMilli(), "content": obj{"algorithm": "m.megolm.v1.aes-sha2",
				"sender_key": senderKey, "device_id": "ANNPHONE", "session_id": ogs.ID(), "ciphertext": string(ct)}}
		bodies[i], err = json.Marshal(obj{"next_batch": fmt.Sprintf("s%d", i+1),
			"rooms":                      obj{"join": obj{family: obj{"timeline": obj{"events": []obj{ev}}}}},
			"device_one_time_keys_count": obj{"signed_curve25519": 50}})
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
