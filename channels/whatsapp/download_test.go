package whatsapp

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/proto/waMmsRetry"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"go.mau.fi/whatsmeow/util/gcmutil"
	"go.mau.fi/whatsmeow/util/hkdfutil"
	"google.golang.org/protobuf/proto"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// registerImage runs an image message through the receive path and returns
// the stored ref, as the host would Lookup it.
func registerImage(t *testing.T, env *testEnv, m *waE2E.ImageMessage) *mediaregistry.MediaReference {
	t.Helper()
	ctx := context.Background()
	in, ok, err := env.receive(t, groupMsg("3EB0DL", &waE2E.Message{ImageMessage: m}))
	if err != nil || !ok || len(in.Refs) != 1 {
		t.Fatalf("inbound: ok=%v err=%v %+v", ok, err, in)
	}
	ref, err := env.reg.Get(ctx, mediaregistry.Chats{in.ChatID}, in.Refs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return &ref
}

// retryAnswer encrypts a media retry notification the way the phone does
// (AES-GCM under an HKDF of the media key, message id as AAD).
func retryAnswer(t *testing.T, info *types.MessageInfo, key []byte, result waMmsRetry.MediaRetryNotification_ResultType, path string) *events.MediaRetry {
	t.Helper()
	plain, err := proto.Marshal(&waMmsRetry.MediaRetryNotification{
		StanzaID: proto.String(info.ID), DirectPath: proto.String(path), Result: result.Enum(),
	})
	if err != nil {
		t.Error(err)
	}
	iv := make([]byte, 12)
	rand.Read(iv)
	ct, err := gcmutil.Encrypt(hkdfutil.SHA256(key, nil, []byte("WhatsApp Media Retry Notification"), 32), iv, plain, []byte(info.ID))
	if err != nil {
		t.Error(err)
	}
	return &events.MediaRetry{Ciphertext: ct, IV: iv, MessageID: info.ID, ChatID: info.Chat, SenderID: info.Sender}
}

// downloadTo runs DownloadTo into a fresh file (an *os.File is a
// mediaregistry.File) and returns what it left there.
func downloadTo(t *testing.T, w *WhatsApp, ref *mediaregistry.MediaReference) ([]byte, error) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "dl-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := w.DownloadTo(context.Background(), ref, f); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return b, nil
}

// downloadCapped runs DownloadTo into the media cache the way the media
// service does: its file refuses every write past the channel's
// DownloadLimit.
func downloadCapped(t *testing.T, env *testEnv, ref *mediaregistry.MediaReference) ([]byte, error) {
	t.Helper()
	cache, err := mediaregistry.OpenCache(filepath.Join(t.TempDir(), "media"), env.st.DB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	max, why := env.w.DownloadLimit(ref)
	if max <= 0 || why == "" {
		t.Fatalf("no download limit for %s: %d %q", ref.ID, max, why)
	}
	e, err := cache.StoreFile(context.Background(), ref.ID, ref.MIME, max, func(f mediaregistry.File) error {
		return env.w.DownloadTo(context.Background(), ref, f)
	})
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(cache.Path(e.SHA256))
	if err != nil {
		t.Fatal(err)
	}
	return b, nil
}

func TestDownloadFake(t *testing.T) {
	payload := bytes.Repeat([]byte("sunset!"), 3000)
	const oldPath, newPath = "/o1/v/t62/abc?ccb=1", "/v/t62/reuploaded"

	cases := []struct {
		name        string
		cdn         map[string][]byte
		declared    uint64 // the sender's FileLength, when not img()'s
		capped      bool   // into the media cache, capped at DownloadLimit
		tooLarge    bool
		phone       func(t *testing.T, env *testEnv, info *types.MessageInfo, key []byte)
		wantBody    []byte
		wantErr     string
		unavailable bool
		receipts    int
		downloads   int
	}{
		{name: "success", cdn: map[string][]byte{oldPath: payload}, wantBody: payload, downloads: 1},
		{name: "success within the declared size", cdn: map[string][]byte{oldPath: payload}, declared: uint64(len(payload)), capped: true,
			wantBody: payload, downloads: 1},
		{
			name: "more bytes than declared", cdn: map[string][]byte{oldPath: payload}, declared: 1000, capped: true,
			wantErr: "more than 1026 bytes", tooLarge: true, downloads: 1,
		},
		{
			name: "403 then media retry",
			cdn:  map[string][]byte{oldPath: nil, newPath: payload},
			phone: func(t *testing.T, env *testEnv, info *types.MessageInfo, key []byte) {
				if info.ID != "3EB0DL" || info.Chat != groupJID || info.Sender != aliceJID || !info.IsGroup || info.IsFromMe {
					t.Errorf("retry receipt for %+v", info)
				}
				env.w.handleEvent(retryAnswer(t, info, key, waMmsRetry.MediaRetryNotification_SUCCESS, newPath))
			},
			wantBody: payload, receipts: 1, downloads: 2,
		},
		{
			name:    "retry timeout",
			cdn:     map[string][]byte{oldPath: nil},
			wantErr: "did not re-upload it within 50ms", receipts: 1, downloads: 1,
		},
		{
			name: "not on phone",
			cdn:  map[string][]byte{oldPath: nil},
			phone: func(t *testing.T, env *testEnv, info *types.MessageInfo, key []byte) {
				env.w.handleEvent(&events.MediaRetry{MessageID: info.ID, Error: &events.MediaRetryError{Code: 2}})
			},
			wantErr: "media no longer available on phone", unavailable: true, receipts: 1, downloads: 1,
		},
		{
			name: "phone says not found",
			cdn:  map[string][]byte{oldPath: nil},
			phone: func(t *testing.T, env *testEnv, info *types.MessageInfo, key []byte) {
				env.w.handleEvent(retryAnswer(t, info, key, waMmsRetry.MediaRetryNotification_NOT_FOUND, ""))
			},
			wantErr: "no longer available", unavailable: true, receipts: 1, downloads: 1,
		},
		{
			name: "answer under another key",
			cdn:  map[string][]byte{oldPath: nil},
			phone: func(t *testing.T, env *testEnv, info *types.MessageInfo, key []byte) {
				env.w.handleEvent(retryAnswer(t, info, bytes.Repeat([]byte{7}, 32), waMmsRetry.MediaRetryNotification_SUCCESS, newPath))
			},
			wantErr: "failed to decrypt notification", receipts: 1, downloads: 1,
		},
		{
			name: "re-uploaded copy gone too",
			cdn:  map[string][]byte{oldPath: nil},
			phone: func(t *testing.T, env *testEnv, info *types.MessageInfo, key []byte) {
				env.w.handleEvent(retryAnswer(t, info, key, waMmsRetry.MediaRetryNotification_SUCCESS, newPath))
			},
			wantErr: "after media retry", unavailable: true, receipts: 1, downloads: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestChannel(t, Config{})
			// The fake phone answers from a goroutine of its own: a short
			// timer could fire first on a loaded machine and turn an answer
			// into a timeout. Only the silent phone needs the timer to fire.
			env.w.retryTimeout = time.Minute
			if tc.phone == nil {
				env.w.retryTimeout = 50 * time.Millisecond
			}
			env.cli.cdn = tc.cdn
			if tc.phone != nil {
				env.cli.onRetry = func(info *types.MessageInfo, key []byte) { tc.phone(t, env, info, key) }
			}
			m := img()
			if tc.declared > 0 {
				m.FileLength = proto.Uint64(tc.declared)
			}
			ref := registerImage(t, env, m)

			start := time.Now()
			download := downloadTo
			if tc.capped {
				download = func(t *testing.T, _ *WhatsApp, ref *mediaregistry.MediaReference) ([]byte, error) {
					return downloadCapped(t, env, ref)
				}
			}
			got, err := download(t, env.w, ref)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("want error %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q, want it to contain %q", err, tc.wantErr)
				}
				if got := errors.Is(err, channels.ErrUnavailable); got != tc.unavailable {
					t.Errorf("errors.Is(ErrUnavailable) = %v, want %v (%v)", got, tc.unavailable, err)
				}
				if got := errors.Is(err, mediaregistry.ErrTooLarge); got != tc.tooLarge {
					t.Errorf("errors.Is(ErrTooLarge) = %v, want %v (%v)", got, tc.tooLarge, err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tc.wantBody) {
					t.Errorf("got %d bytes, want %d", len(got), len(tc.wantBody))
				}
			}
			// Far below the 45 s default and the minute set for an answering
			// phone: nothing waited on a timer it should not have.
			if time.Since(start) > 20*time.Second {
				t.Errorf("download took %v", time.Since(start))
			}
			if env.cli.retryReceipts != tc.receipts || env.cli.downloads != tc.downloads {
				t.Errorf("receipts=%d downloads=%d, want %d %d", env.cli.retryReceipts, env.cli.downloads, tc.receipts, tc.downloads)
			}
			if len(env.w.retries.m) != 0 {
				t.Errorf("retry waiters left: %v", env.w.retries.m)
			}
		})
	}
}

func TestDownloadErrors(t *testing.T) {
	env := newTestChannel(t, Config{})
	ref := registerImage(t, env, img())

	bad := *ref
	bad.Private = []byte("{}")
	if _, err := downloadTo(t, env.w, &bad); err == nil || !strings.Contains(err.Error(), "not readable") {
		t.Errorf("bad handle: %v", err)
	}
	other := *ref
	other.Channel = "telegram"
	if _, err := downloadTo(t, env.w, &other); err == nil {
		t.Error("telegram ref downloaded")
	}
	env.w.cli = nil
	if _, err := downloadTo(t, env.w, ref); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Errorf("not started: %v", err)
	}
	env.w.stop(ErrLoggedOut)
	if _, err := downloadTo(t, env.w, ref); !errors.Is(err, ErrLoggedOut) {
		t.Errorf("logged out: %v", err)
	}
}

// encryptMedia is WhatsApp's media encryption, written from the spec
// rather than whatsmeow's helpers: HKDF-SHA256 of the media key into iv,
// cipher key and mac key; AES-256-CBC with PKCS#7; HMAC-SHA256 over
// iv||ciphertext truncated to 10 bytes and appended.
func encryptMedia(t *testing.T, plain, mediaKey []byte, info string) (enc, encSHA, plainSHA []byte) {
	t.Helper()
	exp, err := hkdf.Key(sha256.New, mediaKey, nil, info, 112)
	if err != nil {
		t.Fatal(err)
	}
	iv, cipherKey, macKey := exp[:16], exp[16:48], exp[48:80]
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	padded := append(bytes.Clone(plain), bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, err := aes.NewCipher(cipherKey)
	if err != nil {
		t.Fatal(err)
	}
	ct := make([]byte, len(padded))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, padded)
	mac := hmac.New(sha256.New, macKey)
	mac.Write(iv)
	mac.Write(ct)
	enc = append(ct, mac.Sum(nil)[:10]...)
	es, ps := sha256.Sum256(enc), sha256.Sum256(plain)
	return enc, es[:], ps[:]
}

// TestDownloadRealDecrypt drives whatsmeow's own download and decrypt code
// against a loopback CDN serving a fixture encrypted here with a random
// key: the bytes must round-trip through the channel's DownloadTo into the
// media cache, capped at the declared size. The client asks a fake
// WhatsApp for its media hosts, as it asks WhatsApp in production, and
// downloads the direct path from the host it names.
func TestDownloadRealDecrypt(t *testing.T) {
	plain := make([]byte, 300_001) // not a block multiple
	rand.Read(plain)
	key := make([]byte, 32)
	rand.Read(key)
	enc, encSHA, plainSHA := encryptMedia(t, plain, key, "WhatsApp Image Keys")
	const (
		fixturePath = "/v/t62.7118-24/11111_22222_n.enc"
		expiredPath = "/v/t62.7118-24/33333_44444_n.enc"
		query       = "?ccb=11-4&oh=01_Q5Aa&oe=68A1B2C3&_nc_sid=5e03e0"
	)

	var hits atomic.Int32
	var tamper atomic.Bool
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		// whatsmeow appends the ciphertext hash and the media type to the
		// direct path's own query.
		q := r.URL.Query()
		if q.Get("ccb") != "11-4" || q.Get("mms-type") != "image" || q.Get("hash") != base64.URLEncoding.EncodeToString(encSHA) {
			t.Errorf("CDN request %s: not the direct path with hash and mms-type", r.URL)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case expiredPath:
			w.WriteHeader(http.StatusGone)
		case fixturePath:
			body := enc
			if tamper.Load() {
				body = bytes.Clone(enc)
				body[100] ^= 1
			}
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	defer cdn.Close()

	env := newTestChannel(t, Config{})
	wm, wa := realClient(t, env, cdn)
	env.w.cli = wm

	m := &waE2E.ImageMessage{
		// Ignored by whatsmeow since 2026-06: a download that used it
		// would get a 404 here.
		URL:           proto.String(cdn.URL + "/o1/v/t62.7118-24/stale.enc" + query),
		DirectPath:    proto.String(fixturePath + query),
		Mimetype:      proto.String("image/jpeg"),
		FileLength:    proto.Uint64(uint64(len(plain))),
		MediaKey:      key,
		FileSHA256:    plainSHA,
		FileEncSHA256: encSHA,
	}
	ref := registerImage(t, env, m)
	got, err := downloadCapped(t, env, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, plain) {
		t.Fatalf("decrypted %d bytes, want the %d-byte fixture", len(got), len(plain))
	}
	if hits.Load() != 1 {
		t.Errorf("CDN hits = %d, want 1", hits.Load())
	}
	if wa.mediaConns.Load() == 0 {
		t.Error("the download did not ask WhatsApp for its media hosts")
	}

	// A flipped ciphertext bit fails the integrity check: nothing is returned.
	tamper.Store(true)
	if _, err := downloadTo(t, env.w, ref); !errors.Is(err, whatsmeow.ErrInvalidMediaEncSHA256) {
		t.Errorf("tampered download: %v, want ErrInvalidMediaEncSHA256", err)
	}

	// A real 410 from the CDN is recognised as expired media and turns
	// into a media retry receipt, which this never-paired client cannot
	// send: the error says so instead of hanging for the phone.
	expired := proto.Clone(m).(*waE2E.ImageMessage)
	expired.DirectPath = proto.String(expiredPath + query)
	_, err = downloadTo(t, env.w, registerImage(t, env, expired))
	if !errors.Is(err, whatsmeow.ErrNotLoggedIn) || !strings.Contains(err.Error(), "media retry request") {
		t.Errorf("expired download: %v", err)
	}
}

// TestDownloadNoMediaHost: when WhatsApp names no media host, whatsmeow
// tries none and reports success with nothing written; the channel must
// not hand that empty file on as the media.
func TestDownloadNoMediaHost(t *testing.T) {
	env := newTestChannel(t, Config{})
	wm := newRealClient(t, env)
	newFakeWhatsApp(t).connect(t, wm)
	env.w.cli = wm

	m := img()
	m.FileLength = proto.Uint64(1000)
	if _, err := downloadTo(t, env.w, registerImage(t, env, m)); err == nil {
		t.Error("a download with no media host succeeded")
	}

	// Nothing declared, nothing to hold the download to.
	undeclared := img()
	undeclared.FileLength = nil
	if _, err := downloadTo(t, env.w, registerImage(t, env, undeclared)); err != nil {
		t.Errorf("undeclared size: %v", err)
	}
}

func TestDownloadLimit(t *testing.T) {
	env := newTestChannel(t, Config{})
	declared := img()
	declared.FileLength = proto.Uint64(1000)
	undeclared := img()
	undeclared.FileLength = nil
	cases := []struct {
		name string
		ref  *mediaregistry.MediaReference
		want int64
		why  string
	}{
		{"declared length plus padding and MAC", registerImage(t, env, declared), 1026, "the size the sender declared"},
		{"nothing declared: no limit of the channel's own", registerImage(t, env, undeclared), 0, ""},
		{"unreadable handle", &mediaregistry.MediaReference{ID: "wa_X", Private: []byte("{}")}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, why := env.w.DownloadLimit(c.ref); got != c.want || why != c.why {
				t.Errorf("DownloadLimit = %d %q, want %d %q", got, why, c.want, c.why)
			}
		})
	}
}
