// Package watest gives tests a paired WhatsApp device in a whatsmeow
// session store, with rows in the tables a running client fills (keys,
// Signal sessions, app state, contacts, chat settings, buffers), and the
// check that another store holds the same device: what `botd database
// migrate` must carry from SQLite to Postgres for the number to come up
// logged in.
package watest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mau.fi/whatsmeow/proto/waAdv"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/store/sqlstore"
	"go.mau.fi/whatsmeow/types"
)

// The paired account and the people and chats the rows are about.
var (
	Own      = types.NewADJID("4915550000000", 0, 12)
	OwnLID   = types.NewADJID("99887766554433", 0, 12)
	Alice    = types.NewJID("4917012345678", types.DefaultUserServer)
	AliceLID = types.NewJID("111222333444555", types.HiddenUserServer)
	Group    = types.NewJID("120363000000000001", types.GroupServer)
)

// PreKeys is how many pre-keys the device has generated and uploaded.
const PreKeys = 12

const (
	aliceAddr = "4917012345678.0"
	appState  = "regular_high"
)

func fill(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// PairedDevice stores a paired device in c (fresh keys, as pairing makes
// them) with rows in every table of the session store, and returns it.
func PairedDevice(t testing.TB, c *sqlstore.Container) *store.Device {
	t.Helper()
	ctx := context.Background()
	dev := c.NewDevice()
	id := Own
	dev.ID = &id
	dev.LID = OwnLID
	dev.PushName = "botd"
	dev.Platform = "android"
	dev.FacebookUUID = uuid.MustParse("5c1b5e0e-8a53-4b5e-9f43-1b0e5d6a7c8d")
	dev.Account = &waAdv.ADVSignedDeviceIdentity{
		Details: []byte("adv details"), AccountSignature: fill(64, 1), AccountSignatureKey: fill(32, 2), DeviceSignature: fill(64, 3),
	}
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("watest: %s: %v", what, err)
		}
	}
	check("save the device", dev.Save(ctx))
	check("identity", dev.Identities.PutIdentity(ctx, aliceAddr, [32]byte(fill(32, 4))))
	check("session", dev.Sessions.PutSession(ctx, aliceAddr, []byte("signal session with alice")))
	pks, err := dev.PreKeys.GetOrGenPreKeys(ctx, PreKeys)
	check("pre-keys", err)
	check("pre-keys uploaded", dev.PreKeys.MarkPreKeysAsUploaded(ctx, pks[len(pks)-1].KeyID))
	check("sender key", dev.SenderKeys.PutSenderKey(ctx, Group.String(), aliceAddr, []byte("sender key")))
	check("app state key", dev.AppStateKeys.PutAppStateSyncKey(ctx, []byte("key-1"),
		store.AppStateSyncKey{Data: []byte("sync key"), Fingerprint: []byte("fp"), Timestamp: 1700000000}))
	check("app state version", dev.AppState.PutAppStateVersion(ctx, appState, 7, [128]byte(fill(128, 5))))
	check("app state macs", dev.AppState.PutAppStateMutationMACs(ctx, appState, 7,
		[]store.AppStateMutationMAC{{IndexMAC: fill(32, 6), ValueMAC: fill(32, 7)}}))
	check("contact", dev.Contacts.PutContactName(ctx, Alice, "Alice Example", "Alice"))
	_, _, err = dev.Contacts.PutPushName(ctx, Alice, "Ali")
	check("push name", err)
	check("pinned", dev.ChatSettings.PutPinned(ctx, Group, true))
	check("archived", dev.ChatSettings.PutArchived(ctx, Alice, false))
	check("muted", dev.ChatSettings.PutMutedUntil(ctx, Alice, time.Unix(1800000000, 0)))
	check("message secret", dev.MsgSecrets.PutMessageSecret(ctx, Group, Alice, "3EB0POLL", []byte("poll secret")))
	check("privacy token", dev.PrivacyTokens.PutPrivacyTokens(ctx,
		store.PrivacyToken{User: Alice, Token: []byte("token"), Timestamp: time.Now().Truncate(time.Second)}))
	check("nct salt", dev.NCTSalt.PutNCTSalt(ctx, []byte("salt")))
	check("buffered event", dev.EventBuffer.PutBufferedEvent(ctx, [32]byte(fill(32, 8)), []byte("plaintext"), time.Unix(1700000000, 0)))
	check("outgoing event", dev.EventBuffer.AddOutgoingEvent(ctx, Group, "3EB0SENT", "proto", []byte("sent plaintext")))
	check("lid map", dev.LIDs.PutLIDMapping(ctx, AliceLID, Alice))
	return dev
}

// SameDevice reports how got (read from another store) differs from want,
// which PairedDevice made: the identity and keys the phone linked, and
// each row PairedDevice wrote, read through whatsmeow's own store.
func SameDevice(got, want *store.Device) error {
	ctx := context.Background()
	switch {
	case got.ID == nil || *got.ID != *want.ID || got.LID != want.LID:
		return fmt.Errorf("device %v (lid %v), want %v (lid %v)", got.ID, got.LID, want.ID, want.LID)
	case got.RegistrationID != want.RegistrationID:
		return fmt.Errorf("registration id %d, want %d", got.RegistrationID, want.RegistrationID)
	case *got.NoiseKey.Priv != *want.NoiseKey.Priv || *got.IdentityKey.Priv != *want.IdentityKey.Priv:
		return fmt.Errorf("noise or identity key differs")
	case got.SignedPreKey.KeyID != want.SignedPreKey.KeyID || *got.SignedPreKey.Priv != *want.SignedPreKey.Priv ||
		*got.SignedPreKey.Signature != *want.SignedPreKey.Signature:
		return fmt.Errorf("signed pre-key differs")
	case !bytes.Equal(got.AdvSecretKey, want.AdvSecretKey) || !bytes.Equal(got.Account.GetDeviceSignature(), want.Account.GetDeviceSignature()) ||
		!bytes.Equal(got.Account.GetDetails(), want.Account.GetDetails()):
		return fmt.Errorf("adv keys or account differ")
	case got.PushName != want.PushName || got.Platform != want.Platform || got.FacebookUUID != want.FacebookUUID:
		return fmt.Errorf("push name %q, platform %q, facebook uuid %v", got.PushName, got.Platform, got.FacebookUUID)
	}
	if ok, err := got.Identities.IsTrustedIdentity(ctx, aliceAddr, [32]byte(fill(32, 4))); err != nil || !ok {
		return fmt.Errorf("alice's identity key not trusted: %v", err)
	}
	if ok, _ := got.Identities.IsTrustedIdentity(ctx, aliceAddr, [32]byte(fill(32, 9))); ok {
		return fmt.Errorf("another identity key for alice trusted")
	}
	if s, err := got.Sessions.GetSession(ctx, aliceAddr); err != nil || string(s) != "signal session with alice" {
		return fmt.Errorf("session with alice %q, %v", s, err)
	}
	if n, err := got.PreKeys.UploadedPreKeyCount(ctx); err != nil || n != PreKeys {
		return fmt.Errorf("%d uploaded pre-keys (%v), want %d", n, err, PreKeys)
	}
	if pk, err := got.PreKeys.GetPreKey(ctx, 3); err != nil || pk == nil {
		return fmt.Errorf("pre-key 3: %v", err)
	}
	if k, err := got.SenderKeys.GetSenderKey(ctx, Group.String(), aliceAddr); err != nil || string(k) != "sender key" {
		return fmt.Errorf("sender key %q, %v", k, err)
	}
	if k, err := got.AppStateKeys.GetAppStateSyncKey(ctx, []byte("key-1")); err != nil || k == nil || string(k.Data) != "sync key" || k.Timestamp != 1700000000 {
		return fmt.Errorf("app state key %+v, %v", k, err)
	}
	if v, h, err := got.AppState.GetAppStateVersion(ctx, appState); err != nil || v != 7 || h != [128]byte(fill(128, 5)) {
		return fmt.Errorf("app state version %d, %v", v, err)
	}
	if m, err := got.AppState.GetAppStateMutationMAC(ctx, appState, fill(32, 6)); err != nil || !bytes.Equal(m, fill(32, 7)) {
		return fmt.Errorf("app state mac %x, %v", m, err)
	}
	// Which of the two names whatsmeow calls first is its business; both
	// must be there.
	if c, err := got.Contacts.GetContact(ctx, Alice); err != nil || c.FullName+"|"+c.FirstName != "Alice|Alice Example" && c.FullName+"|"+c.FirstName != "Alice Example|Alice" || c.PushName != "Ali" {
		return fmt.Errorf("contact %+v, %v", c, err)
	}
	if s, err := got.ChatSettings.GetChatSettings(ctx, Group); err != nil || !s.Pinned || s.Archived {
		return fmt.Errorf("group's settings %+v, %v", s, err)
	}
	if s, err := got.ChatSettings.GetChatSettings(ctx, Alice); err != nil || s.Pinned || s.Archived || s.MutedUntil.Unix() != 1800000000 {
		return fmt.Errorf("alice's settings %+v, %v", s, err)
	}
	if s, _, err := got.MsgSecrets.GetMessageSecret(ctx, Group, Alice, "3EB0POLL"); err != nil || string(s) != "poll secret" {
		return fmt.Errorf("message secret %q, %v", s, err)
	}
	if tok, err := got.PrivacyTokens.GetPrivacyToken(ctx, Alice); err != nil || tok == nil || string(tok.Token) != "token" {
		return fmt.Errorf("privacy token %+v, %v", tok, err)
	}
	if s, err := got.NCTSalt.GetNCTSalt(ctx); err != nil || string(s) != "salt" {
		return fmt.Errorf("nct salt %q, %v", s, err)
	}
	if e, err := got.EventBuffer.GetBufferedEvent(ctx, [32]byte(fill(32, 8))); err != nil || e == nil || string(e.Plaintext) != "plaintext" {
		return fmt.Errorf("buffered event %+v, %v", e, err)
	}
	if _, p, err := got.EventBuffer.GetOutgoingEvent(ctx, Group, types.EmptyJID, "3EB0SENT"); err != nil || string(p) != "sent plaintext" {
		return fmt.Errorf("outgoing event %q, %v", p, err)
	}
	if pn, err := got.LIDs.GetPNForLID(ctx, AliceLID); err != nil || pn != Alice {
		return fmt.Errorf("lid map: %v, %v", pn, err)
	}
	return nil
}
