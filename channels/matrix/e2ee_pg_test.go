//go:build goolm

package matrix

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"

	"maunium.net/go/mautrix/event"

	"github.com/botd-dev/botd/channels/matrix/matrixfake"
)

// TestStandbyKeepsTheDeviceFromPostgres: with the crypto store in
// Postgres, the instance that takes over (its own, empty data dir) opens
// the same device: no new key upload, the same identity and one-time
// keys, and a message Ann's phone encrypted while neither ran, to the
// Megolm session the first instance received, is decrypted and delivered
// by the second; its answer is encrypted and Ann reads it. No crypto file
// or key file is written in either data dir.
func TestStandbyKeepsTheDeviceFromPostgres(t *testing.T) {
	h := pgHarness(t)
	h.fake.SetState(family, "m.room.encryption", ann, "", obj{"algorithm": "m.megolm.v1.aes-sha2"})
	firstDir := h.dataDir
	stop := h.start(t, h.mx)
	if err := h.mx.CryptoOff(); err != nil {
		t.Fatalf("encryption is off on postgres: %v", err)
	}
	keys, n := h.fake.DeviceKeys(matrixfake.UserID, matrixfake.DeviceID)
	if keys == nil || n != 1 {
		t.Fatalf("the bot's device keys: %d uploads", n)
	}
	p := newPeer(t, h.fake, ann, "ANNPHONE")
	p.share(matrixfake.UserID, ann)
	first := p.post(&event.MessageEventContent{MsgType: event.MsgText, Body: "before"})
	if in := h.sink.Next(t); in.ID != first || in.Text != "before" {
		t.Fatalf("got %+v", in)
	}
	otks := h.fake.OneTimeKeys(matrixfake.UserID, matrixfake.DeviceID)
	stop()

	// Encrypted while neither ran, to the session the first instance has.
	during := p.post(&event.MessageEventContent{MsgType: event.MsgText, Body: "during the failover"})

	h.dataDir = t.TempDir()
	standby := h.build(t)
	h.start(t, standby)
	if err := standby.CryptoOff(); err != nil {
		t.Fatalf("encryption is off on the standby: %v", err)
	}
	again, n := h.fake.DeviceKeys(matrixfake.UserID, matrixfake.DeviceID)
	if n != 1 || !bytes.Equal(again, keys) {
		t.Fatalf("the standby uploaded device keys again (%d uploads) or changed them", n)
	}
	if got := h.fake.OneTimeKeys(matrixfake.UserID, matrixfake.DeviceID); got != otks {
		t.Errorf("one-time keys %d → %d across the failover", otks, got)
	}
	if in := h.sink.Next(t); in.ID != during || in.Text != "during the failover" {
		t.Fatalf("the standby delivered %+v, want the message encrypted during the failover", in)
	}
	d, err := standby.Send(context.Background(), chatMsg("still **private**"))
	if err != nil {
		t.Fatal(err)
	}
	evs := h.fake.Events(family, "m.room.encrypted")
	last := evs[len(evs)-1]
	if last.ID != d.MessageIDs[0] {
		t.Fatalf("the standby's answer is not encrypted: %+v", h.fake.Sends())
	}
	p.sync()
	if mc, err := p.open(last); err != nil || mc.Body != "still **private**" {
		t.Fatalf("Ann reads %+v, %v", mc, err)
	}
	for _, dir := range []string{firstDir, h.dataDir} {
		for _, path := range []string{CryptoPath(dir), pickleKeyPath(dir)} {
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s was written: %v", path, err)
			}
		}
	}
}
