package matrix

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"maunium.net/go/mautrix/crypto/attachment"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// receiveRef posts content to Family and returns the ref the channel
// registered for it, as the media service would look it up.
func receiveRef(t *testing.T, h *harness, content obj) mediaregistry.MediaReference {
	t.Helper()
	h.fake.Post(family, ann, content)
	in := h.sink.Next(t)
	if len(in.Refs) != 1 {
		t.Fatalf("no ref delivered: %+v", in)
	}
	ref, err := h.reg.Get(context.Background(), mediaregistry.Chats{in.ChatID}, in.Refs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(in.Text, "mxc://") || strings.Contains(in.Text, `"k"`) {
		t.Fatalf("the download handle leaked into the text: %q", in.Text)
	}
	return ref
}

// fetch streams ref into a real media cache the way the media service
// does (Download, then Cache.Store under a cap).
func fetch(t *testing.T, h *harness, ref *mediaregistry.MediaReference) (*mediaregistry.Cache, mediaregistry.Entry, error) {
	t.Helper()
	dir := t.TempDir()
	cache, err := mediaregistry.OpenCache(dir, h.st.DB, 0)
	if err != nil {
		t.Fatal(err)
	}
	body, _, err := h.mx.Download(context.Background(), ref)
	if err != nil {
		return cache, mediaregistry.Entry{}, err
	}
	defer body.Close()
	e, err := cache.Store(context.Background(), ref.ID, ref.MIME, body, 10<<20)
	return cache, e, err
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func TestDownloadAuthenticatedOnceAndOnlyWhenAsked(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	data := append([]byte("\xff\xd8\xff\xe0"), randomBytes(300<<10)...)
	mxc := h.fake.AddMedia(data, "image/jpeg")
	ref := receiveRef(t, h, obj{"msgtype": "m.image", "body": "p.jpg", "url": mxc, "info": obj{"mimetype": "image/jpeg", "size": len(data)}})
	if h.fake.Downloads("v1")+h.fake.Downloads("v3") != 0 {
		t.Fatal("receiving downloaded the image")
	}
	cache, e, err := fetch(t, h, &ref)
	if err != nil {
		t.Fatal(err)
	}
	if e.Size != int64(len(data)) {
		t.Errorf("cached %d bytes, want %d", e.Size, len(data))
	}
	if got, ok, _ := cache.Lookup(context.Background(), ref.ID); !ok || got.SHA256 != e.SHA256 {
		t.Error("the download is not in the cache")
	}
	if v1, v3 := h.fake.Downloads("v1"), h.fake.Downloads("v3"); v1 != 1 || v3 != 0 {
		t.Errorf("downloads v1=%d v3=%d, want one through the authenticated endpoint", v1, v3)
	}
}

func TestDownloadFallsBackToLegacyMedia(t *testing.T) {
	h := newHarness(t)
	h.fake.LegacyMediaOnly()
	h.start(t, h.mx)
	data := []byte("%PDF-1.4 a small pdf")
	mxc := h.fake.AddMedia(data, "application/pdf")
	ref := receiveRef(t, h, obj{"msgtype": "m.file", "body": "a.pdf", "url": mxc})
	body, _, err := h.mx.Download(context.Background(), &ref)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, body)
	if !bytes.Equal(got, data) || h.fake.Downloads("v3") != 1 || h.fake.Downloads("v1") != 0 {
		t.Errorf("got %q; downloads v1=%d v3=%d, want one legacy download", got, h.fake.Downloads("v1"), h.fake.Downloads("v3"))
	}
}

func TestDownloadErrors(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	ref := receiveRef(t, h, obj{"msgtype": "m.file", "body": "gone.pdf", "url": "mxc://fake.local/nosuchmedia"})
	if _, _, err := h.mx.Download(context.Background(), &ref); !errors.Is(err, channels.ErrUnavailable) {
		t.Errorf("missing media: %v, want ErrUnavailable", err)
	}
	for _, bad := range []string{"mxc://fake.local/../../_synapse/admin", "mxc://evil host/x", "https://fake.local/x"} {
		r := ref
		r.Private = encodeHandle(mediaHandle{MXC: bad})
		if _, _, err := h.mx.Download(context.Background(), &r); !errors.Is(err, channels.ErrUnavailable) {
			t.Errorf("%q: %v, want a refusal", bad, err)
		}
	}
}

// encrypted builds an encrypted attachment the way a Matrix client does.
func encrypted(t *testing.T, plain []byte) (*attachment.EncryptedFile, []byte) {
	t.Helper()
	ef := attachment.NewEncryptedFile()
	cipher := bytes.Clone(plain)
	ef.EncryptInPlace(cipher)
	return ef, cipher
}

func fileObj(mxc string, ef *attachment.EncryptedFile) obj {
	return obj{"url": mxc, "key": ef.Key, "iv": ef.InitVector, "hashes": obj{"sha256": ef.Hashes.SHA256}, "v": ef.Version}
}

func TestEncryptedAttachmentDecrypted(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	plain := append([]byte("\x89PNG\r\n\x1a\n"), randomBytes(200<<10)...)
	ef, cipher := encrypted(t, plain)
	mxc := h.fake.AddMedia(cipher, "application/octet-stream")
	ref := receiveRef(t, h, obj{"msgtype": "m.image", "body": "secret.png", "file": fileObj(mxc, ef), "info": obj{"mimetype": "image/png"}})
	_, e, err := fetch(t, h, &ref)
	if err != nil {
		t.Fatal(err)
	}
	if e.Size != int64(len(plain)) || e.MIME != "image/png" {
		t.Errorf("cached %d bytes of %s, want the %d-byte PNG", e.Size, e.MIME, len(plain))
	}
}

func TestTamperedAttachmentRefusedNothingKept(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	plain := append([]byte("\x89PNG\r\n\x1a\n"), randomBytes(100<<10)...)
	ef, cipher := encrypted(t, plain)
	mxc := h.fake.AddMedia(cipher, "application/octet-stream")
	ref := receiveRef(t, h, obj{"msgtype": "m.image", "body": "secret.png", "file": fileObj(mxc, ef)})
	tampered := bytes.Clone(cipher)
	tampered[len(tampered)/2] ^= 1
	h.fake.ReplaceMedia(mxc, tampered)

	cache, _, err := fetch(t, h, &ref)
	if !errors.Is(err, attachment.ErrHashMismatch) {
		t.Fatalf("a tampered attachment gave %v, want the hash mismatch", err)
	}
	if _, ok, _ := cache.Lookup(context.Background(), ref.ID); ok {
		t.Error("the tampered file is in the cache")
	}
	var files []string
	_ = filepath.WalkDir(cache.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 0 {
		t.Errorf("files left in the cache: %v", files)
	}

	// A bad key is refused before any request.
	before := h.fake.Downloads("v1")
	r := ref
	bad := *ef
	bad.Key.Key = "short"
	r.Private = encodeHandle(mediaHandle{MXC: mxc, File: &bad})
	if _, _, err := h.mx.Download(context.Background(), &r); !errors.Is(err, channels.ErrUnavailable) || h.fake.Downloads("v1") != before {
		t.Errorf("bad key: %v (downloads %d → %d)", err, before, h.fake.Downloads("v1"))
	}
}

func readAll(t *testing.T, rc io.ReadCloser) []byte {
	t.Helper()
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
