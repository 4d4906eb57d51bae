//go:build goolm

package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/matrix/matrixfake"
	"github.com/botd-dev/botd/mediaregistry"
)

// peer is the other side of an encrypted chat: a user of the fake with
// a device of its own and mautrix's real OlmMachine (pure-Go Olm), as
// Element would be.
type peer struct {
	t     *testing.T
	fake  *matrixfake.Server
	user  id.UserID
	cli   *mautrix.Client
	mach  *crypto.OlmMachine
	since string
}

// peerState tells the peer's machine that every room is encrypted.
type peerState struct{}

func (peerState) IsEncrypted(context.Context, id.RoomID) (bool, error) { return true, nil }
func (peerState) GetEncryptionEvent(context.Context, id.RoomID) (*event.EncryptionEventContent, error) {
	return &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}, nil
}
func (peerState) GetHistoryVisibility(context.Context, id.RoomID) (*event.HistoryVisibilityEventContent, error) {
	return nil, nil
}
func (peerState) FindSharedRooms(context.Context, id.UserID) ([]id.RoomID, error) {
	return []id.RoomID{family}, nil
}

// newPeer makes user's device on the fake and uploads its keys.
func newPeer(t *testing.T, fake *matrixfake.Server, user, device string) *peer {
	t.Helper()
	ctx := context.Background()
	tok := fake.AddUser(user, device)
	cli, err := mautrix.NewClient(fake.URL(), id.UserID(user), tok)
	if err != nil {
		t.Fatal(err)
	}
	cli.DeviceID = id.DeviceID(device)
	mach := crypto.NewOlmMachine(cli, nil, crypto.NewMemoryStore(func() error { return nil }), peerState{})
	if err := mach.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mach.ShareKeys(ctx, -1); err != nil {
		t.Fatalf("%s uploading keys: %v", user, err)
	}
	return &peer{t: t, fake: fake, user: id.UserID(user), cli: cli, mach: mach}
}

// share sends the peer's room key for family to the devices of users.
func (p *peer) share(users ...id.UserID) {
	p.t.Helper()
	if err := p.mach.ShareGroupSession(context.Background(), family, users); err != nil {
		p.t.Fatalf("sharing the room key: %v", err)
	}
}

// seal encrypts content as the peer's next message in family.
func (p *peer) seal(content any) *event.EncryptedEventContent {
	p.t.Helper()
	enc, err := p.mach.EncryptMegolmEvent(context.Background(), family, event.EventMessage, content)
	if err != nil {
		p.t.Fatalf("encrypting: %v", err)
	}
	return enc
}

// post encrypts content and posts it to family; returns the event id.
func (p *peer) post(content any) string {
	p.t.Helper()
	return p.fake.PostType(string(family), "m.room.encrypted", string(p.user), p.seal(content))
}

// sync takes the peer's to-device events (room keys) from the fake.
func (p *peer) sync() {
	p.t.Helper()
	resp, err := p.cli.FullSyncRequest(context.Background(), mautrix.ReqSync{Since: p.since})
	if err != nil {
		p.t.Fatalf("peer sync: %v", err)
	}
	p.mach.ProcessSyncResponse(context.Background(), resp, p.since)
	p.since = resp.NextBatch
}

// open decrypts an event the fake holds, as the peer's client would.
func (p *peer) open(e matrixfake.Event) (*event.MessageEventContent, error) {
	p.t.Helper()
	evt := &event.Event{ID: id.EventID(e.ID), RoomID: id.RoomID(e.Room), Sender: id.UserID(e.Sender), Type: event.EventEncrypted, Timestamp: e.TS}
	if err := json.Unmarshal(e.Content, &evt.Content); err != nil {
		p.t.Fatal(err)
	}
	if err := evt.Content.ParseRaw(evt.Type); err != nil {
		p.t.Fatal(err)
	}
	dec, err := p.mach.DecryptMegolmEvent(context.Background(), evt)
	if err != nil {
		return nil, err
	}
	mc := dec.Content.AsMessage()
	return mc, nil
}

// encryptedHarness is a harness whose Family room is end-to-end
// encrypted, started, with Ann's phone as a peer holding a room key the
// bot's device has.
func encryptedHarness(t *testing.T) (*harness, *peer, func()) {
	t.Helper()
	h := newHarness(t)
	h.fake.SetState(family, "m.room.encryption", ann, "", obj{"algorithm": "m.megolm.v1.aes-sha2"})
	stop := h.start(t, h.mx)
	if err := h.mx.CryptoOff(); err != nil {
		t.Fatalf("encryption is off: %v", err)
	}
	if keys, n := h.fake.DeviceKeys(matrixfake.UserID, matrixfake.DeviceID); keys == nil || n != 1 {
		t.Fatalf("the bot's device keys: %d uploads", n)
	}
	p := newPeer(t, h.fake, ann, "ANNPHONE")
	p.share(matrixfake.UserID, ann)
	return h, p, stop
}

func TestEncryptedRoomMessagesDecryptedLikePlaintext(t *testing.T) {
	h, p, _ := encryptedHarness(t)
	ctx := context.Background()

	evID := p.post(&event.MessageEventContent{MsgType: event.MsgText, Body: "hey botd, what is this?",
		Mentions: &event.Mentions{UserIDs: []id.UserID{matrixfake.UserID}}})
	in := h.sink.Next(t)
	if in.ID != evID || in.ChatID != ChatID(family) || in.SenderID != ann || in.SenderName != "Ann" || in.ChatName != "Family" {
		t.Fatalf("decrypted message: %+v", in)
	}
	if !in.Mentioned || in.Text != "@Andy hey botd, what is this?" {
		t.Errorf("mentioned=%v text=%q", in.Mentioned, in.Text)
	}
	if got := h.mx.EncryptedRooms(); len(got) != 0 {
		t.Errorf("EncryptedRooms = %v while encryption is on", got)
	}

	// An encrypted image: a placeholder, no download; the fetch decrypts.
	plain := append([]byte("\x89PNG\r\n\x1a\n"), randomBytes(100<<10)...)
	ef := attachment.NewEncryptedFile()
	mxc := h.fake.AddMedia(ef.Encrypt(plain), "application/octet-stream")
	imgID := p.post(&event.MessageEventContent{MsgType: event.MsgImage, Body: "cat.png",
		File: &event.EncryptedFileInfo{EncryptedFile: *ef, URL: id.ContentURIString(mxc)},
		Info: &event.FileInfo{MimeType: "image/png", Size: len(plain), Width: 640, Height: 480}})
	in = h.sink.Next(t)
	if in.ID != imgID || len(in.Refs) != 1 || in.Refs[0].Kind != mediaregistry.Image {
		t.Fatalf("encrypted image: %+v", in)
	}
	if !strings.HasPrefix(in.Text, "[Image: cat.png, 100KB, image/png, ref:mx_") {
		t.Errorf("placeholder %q", in.Text)
	}
	if n := h.fake.Downloads("v1") + h.fake.Downloads("v3"); n != 0 {
		t.Fatalf("receiving downloaded %d files", n)
	}
	ref, err := h.reg.Get(ctx, mediaregistry.Chats{in.ChatID}, in.Refs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	cache, e, err := fetch(t, h, &ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(cache.Path(e.SHA256))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("the fetched image is not the decrypted plaintext (err %v, %d bytes)", err, len(got))
	}

	// The answer is encrypted; Ann's device decrypts it, HTML included.
	d, err := h.mx.Send(ctx, channels.OutMessage{Chat: ChatID(family), Text: "It is **a cat**.", ReplyTo: evID})
	if err != nil {
		t.Fatal(err)
	}
	var sent matrixfake.Event
	for _, e := range h.fake.Events(family, "m.room.encrypted") {
		if e.ID == d.MessageIDs[0] {
			sent = e
		}
	}
	if sent.ID == "" {
		t.Fatalf("the answer %s is not an m.room.encrypted event; sends: %+v", d.MessageIDs[0], h.fake.Sends())
	}
	if bytes.Contains(sent.Content, []byte("a cat")) {
		t.Fatalf("the answer went in the clear: %s", sent.Content)
	}
	if len(h.fake.ToDevice(ann, "m.room.encrypted")) == 0 {
		t.Fatal("the bot sent Ann's device no room key")
	}
	p.sync()
	mc, err := p.open(sent)
	if err != nil {
		t.Fatalf("Ann cannot decrypt the answer: %v", err)
	}
	if mc.Body != "It is **a cat**." || mc.Format != event.FormatHTML || !strings.Contains(mc.FormattedBody, "<strong>a cat</strong>") {
		t.Errorf("decrypted answer: body %q format %q html %q", mc.Body, mc.Format, mc.FormattedBody)
	}
	if mc.RelatesTo.GetReplyTo() != id.EventID(evID) {
		t.Errorf("the answer replies to %q, want %q", mc.RelatesTo.GetReplyTo(), evID)
	}
	// The bot reads its own encrypted answer back as its own.
	if echo := h.sink.Next(t); !echo.FromMe || echo.ID != sent.ID || !strings.Contains(echo.Text, "a cat") {
		t.Errorf("the bot's echo: %+v", echo)
	}
}

func TestEncryptedRoomMediaSentEncrypted(t *testing.T) {
	h, p, _ := encryptedHarness(t)
	plain := randomBytes(70 << 10)
	f := filepath.Join(t.TempDir(), "notes.bin")
	if err := os.WriteFile(f, plain, 0o600); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	d, err := h.mx.SendMedia(context.Background(), channels.OutMedia{Chat: ChatID(family), File: fh, FileName: "notes.bin",
		MIME: "application/octet-stream", Caption: "the notes"})
	if err != nil {
		t.Fatal(err)
	}
	evs := h.fake.Events(family, "m.room.encrypted")
	if len(evs) == 0 || evs[len(evs)-1].ID != d.MessageIDs[0] {
		t.Fatalf("the file's event is not encrypted: %+v", h.fake.Sends())
	}
	p.sync()
	mc, err := p.open(evs[len(evs)-1])
	if err != nil {
		t.Fatal(err)
	}
	if mc.URL != "" || mc.File == nil || mc.Body != "the notes" {
		t.Fatalf("decrypted file event: url %q file %v body %q", mc.URL, mc.File, mc.Body)
	}
	cipher, _, ok := h.fake.Media(string(mc.File.URL))
	if !ok || bytes.Equal(cipher, plain) {
		t.Fatal("the file was uploaded in the clear (or not at all)")
	}
	if err := mc.File.DecryptInPlace(cipher); err != nil || !bytes.Equal(cipher, plain) {
		t.Fatalf("Ann cannot decrypt the file: %v", err)
	}
}

func TestUndecryptableMessagesAreNotDelivered(t *testing.T) {
	h, p, _ := encryptedHarness(t)

	// Tampered: one character of the ciphertext changed.
	enc := p.seal(&event.MessageEventContent{MsgType: event.MsgText, Body: "tampered secret"})
	ct := []byte(enc.MegolmCiphertext)
	i := len(ct) / 2
	if ct[i] == 'A' {
		ct[i] = 'B'
	} else {
		ct[i] = 'A'
	}
	enc.MegolmCiphertext = ct
	bad := h.fake.PostType(family, "m.room.encrypted", ann, enc)

	// No session yet: the room key of Ann's laptop is slower than its
	// message (held back by the fake).
	laptop := newPeer(t, h.fake, ann, "ANNLAPTOP")
	h.fake.HoldToDevice(matrixfake.UserID)
	laptop.share(matrixfake.UserID, ann)
	waiting := laptop.post(&event.MessageEventContent{MsgType: event.MsgText, Body: "from the laptop"})

	marker := p.post(&event.MessageEventContent{MsgType: event.MsgText, Body: "marker"})
	if in := h.sink.Next(t); in.ID != marker || in.Text != "marker" {
		t.Fatalf("got %+v, want the marker: an undecryptable message was delivered", in)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "cannot decrypt a message; it is dropped") || !strings.Contains(logs, "id="+bad) {
		t.Errorf("the tampered message was not logged:\n%s", logs)
	}
	if !strings.Contains(logs, "cannot decrypt a message yet: no room key") || !strings.Contains(logs, "id="+waiting) {
		t.Errorf("the message without a key was not logged:\n%s", logs)
	}
	if strings.Contains(logs, "tampered secret") {
		t.Error("the tampered plaintext reached the log")
	}

	// The channel keeps running, and the laptop's key arriving late
	// delivers the message that waited for it.
	if n := h.fake.ReleaseToDevice(matrixfake.UserID); n != 1 {
		t.Fatalf("%d room keys were held for the bot, want the laptop's one", n)
	}
	if in := h.sink.Next(t); in.ID != waiting || in.Text != "from the laptop" {
		t.Fatalf("got %+v, want the message that waited for its key", in)
	}
	if n := h.sink.Total(); n != 2 {
		t.Errorf("delivered %d messages, want the marker and the late one", n)
	}
}

func TestCryptoRestartKeepsTheDevice(t *testing.T) {
	h, p, stop := encryptedHarness(t)
	first := p.post(&event.MessageEventContent{MsgType: event.MsgText, Body: "before"})
	if in := h.sink.Next(t); in.ID != first {
		t.Fatalf("got %+v", in)
	}
	keys, _ := h.fake.DeviceKeys(matrixfake.UserID, matrixfake.DeviceID)
	otks := h.fake.OneTimeKeys(matrixfake.UserID, matrixfake.DeviceID)
	stop()

	m2 := h.build(t)
	h.start(t, m2)
	if err := m2.CryptoOff(); err != nil {
		t.Fatalf("encryption is off after the restart: %v", err)
	}
	again, n := h.fake.DeviceKeys(matrixfake.UserID, matrixfake.DeviceID)
	if n != 1 || !bytes.Equal(again, keys) {
		t.Fatalf("the restart uploaded device keys again (%d uploads) or changed them", n)
	}
	if got := h.fake.OneTimeKeys(matrixfake.UserID, matrixfake.DeviceID); got != otks {
		t.Errorf("one-time keys %d → %d across the restart", otks, got)
	}
	// The same Megolm session, no new key: the store kept it.
	second := p.post(&event.MessageEventContent{MsgType: event.MsgText, Body: "after"})
	if in := h.sink.Next(t); in.ID != second || in.Text != "after" {
		t.Fatalf("after the restart: %+v", in)
	}
	// The room is known as encrypted from the store (its state event came
	// before the saved position): the answer is encrypted.
	d, err := m2.Send(context.Background(), chatMsg("still **private**"))
	if err != nil {
		t.Fatal(err)
	}
	evs := h.fake.Events(family, "m.room.encrypted")
	last := evs[len(evs)-1]
	if last.ID != d.MessageIDs[0] {
		t.Fatalf("the answer after the restart is not encrypted: %+v", h.fake.Sends())
	}
	if n := h.fake.StateGets(); n != 0 {
		t.Errorf("asked the homeserver %d times; the store knows the room is encrypted", n)
	}
	p.sync()
	if mc, err := p.open(last); err != nil || mc.Body != "still **private**" {
		t.Fatalf("Ann reads %+v, %v", mc, err)
	}
	for _, path := range []string{CryptoPath(h.dataDir), pickleKeyPath(h.dataDir)} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", path, st.Mode().Perm())
		}
		if rel, _ := filepath.Rel(h.dataDir, path); !strings.HasPrefix(rel, "matrix"+string(filepath.Separator)) {
			t.Errorf("%s is not under <data_dir>/matrix", path)
		}
	}
}

// TestMessageWhoseKeyNeverComes: a message waits for its room key as
// long as keyWait, then is given up on with a log line, and a key
// arriving after that delivers nothing.
func TestMessageWhoseKeyNeverComes(t *testing.T) {
	h := newHarness(t)
	h.mx.keyWait = 0 // given up on at the first retry
	h.fake.SetState(family, "m.room.encryption", ann, "", obj{"algorithm": "m.megolm.v1.aes-sha2"})
	h.start(t, h.mx)
	p := newPeer(t, h.fake, ann, "ANNPHONE")
	h.fake.HoldToDevice(matrixfake.UserID)
	p.share(matrixfake.UserID, ann)
	lost := p.post(&event.MessageEventContent{MsgType: event.MsgText, Body: "too late"})
	// Two plaintext markers, the second posted after the first arrived:
	// it comes in a later sync than the lost message, whose retry runs
	// before that sync's rooms.
	for _, body := range []string{"one", "two"} {
		h.fake.Post(family, ann, obj{"msgtype": "m.text", "body": body})
		if in := h.sink.Next(t); in.Text != body {
			t.Fatalf("got %+v, want %q", in, body)
		}
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "gave up on an encrypted message: its room key never came") || !strings.Contains(logs, "id="+lost) {
		t.Fatalf("giving up was not logged:\n%s", logs)
	}
	h.fake.ReleaseToDevice(matrixfake.UserID)
	h.fake.Post(family, ann, obj{"msgtype": "m.text", "body": "three"})
	if in := h.sink.Next(t); in.Text != "three" {
		t.Fatalf("got %+v after the key came late; the message given up on must stay undelivered", in)
	}
}

// TestTokenOfAnotherClientsDevice: an access token copied from Element
// belongs to a device whose keys Element uploaded; botd cannot hold
// that device's keys, says so, and leaves encryption off rather than
// upload keys over Element's.
func TestTokenOfAnotherClientsDevice(t *testing.T) {
	h := newHarness(t)
	newPeer(t, h.fake, matrixfake.UserID, matrixfake.DeviceID) // "Element" on the bot's device
	keys, _ := h.fake.DeviceKeys(matrixfake.UserID, matrixfake.DeviceID)
	h.start(t, h.mx)
	err := h.mx.CryptoOff()
	if err == nil || !strings.Contains(err.Error(), "already has keys on the homeserver that are not in botd's store") {
		t.Fatalf("CryptoOff = %v", err)
	}
	if again, n := h.fake.DeviceKeys(matrixfake.UserID, matrixfake.DeviceID); n != 1 || !bytes.Equal(again, keys) {
		t.Errorf("botd uploaded keys over the other client's (%d uploads)", n)
	}
	if !strings.Contains(h.logs.String(), "end-to-end encryption is off; encrypted rooms are refused") {
		t.Errorf("not logged:\n%s", h.logs.String())
	}
}

// A live answer in an encrypted room: its start and its edits are
// encrypted, and Ann's device reads the edit as a replacement of the
// start with the whole answer.
func TestEncryptedRoomLiveAnswer(t *testing.T) {
	h, p, _ := encryptedHarness(t)
	ctx := context.Background()
	lm, err := h.mx.BeginStream(ctx, channels.OutMessage{Chat: ChatID(family), Text: "It is"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lm.Finish(ctx, "It is **a cat**."); err != nil {
		t.Fatal(err)
	}
	evs := h.fake.Events(family, "m.room.encrypted")
	if len(evs) < 2 {
		t.Fatalf("%d encrypted events, want the start and its edit; sends: %+v", len(evs), h.fake.Sends())
	}
	start, edit := evs[len(evs)-2], evs[len(evs)-1]
	if start.ID != lm.IDs()[0] || bytes.Contains(edit.Content, []byte("a cat")) {
		t.Fatalf("start %s (want %s), or the edit went in the clear: %s", start.ID, lm.IDs()[0], edit.Content)
	}
	p.sync()
	mc, err := p.open(edit)
	if err != nil {
		t.Fatalf("Ann cannot decrypt the edit: %v", err)
	}
	if mc.RelatesTo == nil || mc.RelatesTo.GetReplaceID() != id.EventID(start.ID) || mc.NewContent == nil ||
		mc.NewContent.Body != "It is **a cat**." || !strings.Contains(mc.NewContent.FormattedBody, "<strong>a cat</strong>") {
		t.Fatalf("decrypted edit: %+v (new content %+v)", mc, mc.NewContent)
	}
}
