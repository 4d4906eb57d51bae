//go:build goolm

package matrix

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/store"
)

// offlineCrypto gives m an Olm machine over a fresh crypto store and no
// homeserver (its requests fail at once): for feeding to-device events,
// device lists and encrypted events straight to the parser.
func offlineCrypto(tb testing.TB, m *Matrix) cryptoEngine {
	tb.Helper()
	m.cli.DeviceID = id.DeviceID("FUZZDEVICE")
	raw, err := sql.Open("sqlite", store.DSN(filepath.Join(tb.TempDir(), "crypto.db")))
	if err != nil {
		tb.Fatal(err)
	}
	db, err := dbutil.NewWithDB(raw, "sqlite")
	if err != nil {
		tb.Fatal(err)
	}
	e, err := m.loadOlm(context.Background(), db, make([]byte, 32), false)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.close() })
	return e
}
