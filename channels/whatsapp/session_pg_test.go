package whatsapp

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	waBinary "go.mau.fi/whatsmeow/binary"
	wastore "go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/whatsapp/watest"
	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/store"
)

// A device paired on SQLite, copied to Postgres as `botd database
// migrate` does, comes up logged in there: with botd's database on
// Postgres the channel opens whatsmeow's store in it (no file is made),
// and the client presents the paired device's noise key and JID to a fake
// WhatsApp, which takes them (<success>).
func TestStartOnPostgresAfterMigration(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	env := newTestChannel(t, Config{})
	pgCfg := store.Config{Driver: "postgres", DSN: dsn}
	session := SessionFor(Config{}, pgCfg, env.dbDir)
	if session.PostgresDSN != dsn || session.Path != "" || strings.Contains(session.String(), dsn) {
		t.Fatalf("session for postgres: %+v, named %q", session, session.String())
	}
	if s := SessionFor(Config{SessionDB: "/x/wa.db"}, store.DefaultConfig(), env.dbDir); s.Path != "/x/wa.db" || s.PostgresDSN != "" {
		t.Fatalf("session for sqlite: %+v", s)
	}

	// Nothing paired in Postgres yet: Start says so, and names no file.
	w, err := New(Config{}, session, env.w.env)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err == nil || !strings.Contains(err.Error(), "no paired device in the postgres database") {
		t.Fatalf("Start without a device in postgres: %v", err)
	}
	if _, err := os.Stat(filepath.Join(env.dbDir, "whatsapp.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a session file was made: %v", err)
	}

	// Paired on SQLite, then migrated.
	path := filepath.Join(env.dbDir, "whatsapp.db")
	c, err := openContainer(ctx, Session{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := watest.PairedDevice(t, c)
	c.Close()
	pg, err := store.Connect(ctx, pgCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	att, err := SessionCopy(ctx, path, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.st.CopyTo(ctx, pg, att); err != nil {
		t.Fatal(err)
	}
	att.DB.Close()
	// Only Postgres from here on.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}

	fake := newFakeWhatsApp(t)
	w, err = New(Config{}, session, env.w.env)
	if err != nil {
		t.Fatal(err)
	}
	w.startWait = chantest.HangGuard
	w.sleep = func(ctx context.Context, _ time.Duration) bool { <-ctx.Done(); return false }
	gone := make(chan struct{})
	var once sync.Once
	w.prepare = func(wm *whatsmeow.Client) {
		hc := &http.Client{Transport: fake.transport()}
		wm.SetPreLoginHTTPClient(hc)
		wm.SetWebsocketHTTPClient(hc)
		wm.AddEventHandler(func(e any) {
			if _, ok := e.(*events.Disconnected); ok {
				once.Do(func() { close(gone) })
			}
		})
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- w.Start(runCtx) }()

	s := fake.session(t)
	user, _ := strconv.ParseUint(watest.Own.User, 10, 64)
	if string(s.clientStatic) != string(want.NoiseKey.Pub[:]) {
		t.Error("the client's noise key is not the paired device's")
	}
	if s.payload.GetUsername() != user || s.payload.GetDevice() != uint32(watest.Own.Device) || !s.payload.GetPassive() {
		t.Errorf("login payload: user %d device %d passive %v, want %d, %d, a login", s.payload.GetUsername(),
			s.payload.GetDevice(), s.payload.GetPassive(), user, watest.Own.Device)
	}
	if err := s.writeNode(waBinary.Node{Tag: "success", Attrs: waBinary.Attrs{
		"t": strconv.FormatInt(time.Now().Unix(), 10), "lid": watest.OwnLID.String(),
	}}); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, started, "Start's return"); err != nil {
		t.Fatalf("Start on postgres: %v", err)
	}
	if !w.isOwn(types.NewJID(watest.Own.User, types.DefaultUserServer)) || !w.isOwn(watest.OwnLID) {
		t.Errorf("own users %v", w.own)
	}

	// The server hangs up first (see fakeWhatsApp.connect), then the
	// channel stops.
	fake.hangUp()
	recv(t, gone, "the client noticing the hang-up")
	cancel()
	chantest.WaitReturns(t, w)

	// The session the client used is the migrated one, still whole.
	c, err = openContainer(ctx, session, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.GetFirstDevice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := watest.SameDevice(got, want); err != nil {
		t.Errorf("the device on postgres after the login: %v", err)
	}
}

// BenchmarkSessionCopy times `botd database migrate`'s copy of a session
// store the size of a busy account's (5,000 contacts with their Signal
// sessions and identity keys, 20,000 app state MACs, the LID map) into an
// empty Postgres database, with the schema upgrade before it.
func BenchmarkSessionCopy(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	path := filepath.Join(dir, "whatsapp.db")
	c, err := openContainer(ctx, Session{Path: path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	dev := watest.PairedDevice(b, c)
	const people, macs = 5000, 20000
	contacts := make([]wastore.ContactEntry, people)
	sessions := make(map[string][]byte, people)
	lids := make([]wastore.LIDMapping, people)
	for i := range people {
		jid := types.NewJID(strconv.Itoa(4917000000000+i), types.DefaultUserServer)
		contacts[i] = wastore.ContactEntry{JID: jid, FirstName: "P" + strconv.Itoa(i), FullName: "Person " + strconv.Itoa(i)}
		sessions[jid.User+".0"] = make([]byte, 1500) // a Signal session record's size
		lids[i] = wastore.LIDMapping{LID: types.NewJID(strconv.Itoa(100000000000000+i), types.HiddenUserServer), PN: jid}
		if err := dev.Identities.PutIdentity(ctx, jid.User+".0", [32]byte{byte(i), byte(i >> 8), 1}); err != nil {
			b.Fatal(err)
		}
	}
	mutations := make([]wastore.AppStateMutationMAC, macs)
	for i := range mutations {
		idx := make([]byte, 32)
		copy(idx, strconv.Itoa(i))
		mutations[i] = wastore.AppStateMutationMAC{IndexMAC: idx, ValueMAC: make([]byte, 32)}
	}
	for _, err := range []error{
		dev.Contacts.PutAllContactNames(ctx, contacts),
		dev.Sessions.PutManySessions(ctx, sessions),
		dev.LIDs.PutManyLIDMappings(ctx, lids),
		dev.AppState.PutAppStateMutationMACs(ctx, "regular_high", 7, mutations),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	from, err := store.Open(ctx, filepath.Join(dir, "botd.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer from.Close()

	var rows int64
	for b.Loop() {
		b.StopTimer()
		dsn := pgtest.DSN(b)
		to, err := store.OpenPostgres(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		att, err := SessionCopy(ctx, path, dsn, nil)
		if err != nil {
			b.Fatal(err)
		}
		counts, err := from.CopyTo(ctx, to, att)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		att.DB.Close()
		to.Close()
		rows = 0
		for _, c := range counts {
			if c.Source == att.Name {
				rows += c.To
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(rows), "session-rows")
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
