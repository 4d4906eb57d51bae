package whatsapp

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"go.mau.fi/whatsmeow/types"

	"github.com/botd-dev/botd/store"
)

// TestSessionStoreUpgrade opens a session store written by the whatsmeow
// botd pinned before with the current one: its schema migrations must run
// on modernc's SQLite and keep the pairing, or every updated daemon would
// have to be linked to the phone again.
func TestSessionStoreUpgrade(t *testing.T) {
	ctx := t.Context()
	dump, err := os.ReadFile(filepath.Join("testdata", "session-v11.sql"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "whatsapp.db")
	db, err := sql.Open("sqlite", store.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, string(dump)); err != nil {
		t.Fatalf("load the old store: %v", err)
	}
	db.Close()

	wantID := "4915550000000:12@s.whatsapp.net"
	alice := types.NewJID("111222333444555", types.HiddenUserServer)
	// The second open finds the schema current and changes nothing.
	for _, pushName := range []string{"botd", "Andy"} {
		c, err := openContainer(ctx, Session{Path: path}, nil)
		if err != nil {
			t.Fatalf("open the old store: %v", err)
		}
		dev, err := c.GetFirstDevice(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if dev.ID == nil || dev.ID.String() != wantID || dev.LID.String() != "99887766554433:12@lid" || dev.PushName != pushName {
			t.Fatalf("device after the upgrade: id=%v lid=%v push name %q, want %s, the LID, %q", dev.ID, dev.LID, dev.PushName, wantID, pushName)
		}
		if pn, err := dev.LIDs.GetPNForLID(ctx, alice); err != nil || pn.String() != "4917012345678@s.whatsapp.net" {
			t.Errorf("LID map after the upgrade: %v, %v", pn, err)
		}
		// A write through the migrated device table.
		dev.PushName = "Andy"
		if err := dev.Save(ctx); err != nil {
			t.Errorf("save the device: %v", err)
		}
		c.Close()
	}

	db, err = sql.Open("sqlite", store.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	if err := db.QueryRowContext(ctx, "SELECT version FROM whatsmeow_version").Scan(&version); err != nil || version <= 11 {
		t.Errorf("schema version %d (%v), want past 11", version, err)
	}
}
