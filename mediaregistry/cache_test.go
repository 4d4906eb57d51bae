package mediaregistry_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/mediaregistry"
)

// openCache opens a cache on a new database of cfg's driver.
func openCache(t *testing.T, cfg store.Config) (*mediaregistry.Cache, string) {
	t.Helper()
	dir := t.TempDir()
	st := openStore(t, storetest.Config(t, sqldialect.Dialect(cfg.Driver)))
	c, err := mediaregistry.OpenCache(filepath.Join(dir, "media"), st.DB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return c, filepath.Join(dir, "media")
}

func assertTmpEmpty(t *testing.T, dir string) {
	t.Helper()
	left, _ := os.ReadDir(filepath.Join(dir, "tmp"))
	if len(left) != 0 {
		t.Fatalf("partial files left in the cache: %v", left)
	}
}

// A channel that writes into the cache file directly (WhatsApp decrypts in
// place) is held to the cap by every kind of write, not only Write.
func TestStoreFileCapHoldsForEveryWrite(t *testing.T) {
	storetest.Each(t, testStoreFileCapHoldsForEveryWrite)
}

func testStoreFileCapHoldsForEveryWrite(t *testing.T, db store.Config) {
	const max = 100
	tests := []struct {
		name string
		fill func(f mediaregistry.File) error
	}{
		{"Write", func(f mediaregistry.File) error { _, err := f.Write(make([]byte, max+1)); return err }},
		{"Write in pieces", func(f mediaregistry.File) error {
			for range 11 {
				if _, err := f.Write(make([]byte, 10)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"WriteAt past the cap", func(f mediaregistry.File) error { _, err := f.WriteAt([]byte("x"), max); return err }},
		{"Truncate past the cap", func(f mediaregistry.File) error { return f.Truncate(max + 1) }},
		{"io.Copy", func(f mediaregistry.File) error {
			_, err := io.Copy(f, bytes.NewReader(make([]byte, 1000)))
			return err
		}},
		// A library that loses the cause must still be reported as the cap.
		{"error without %w", func(f mediaregistry.File) error {
			if _, err := f.Write(make([]byte, max+1)); err != nil {
				return errors.New("write failed: " + err.Error())
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dir := openCache(t, db)
			_, err := c.StoreFile(context.Background(), "wa_x", "", max, tt.fill)
			if !errors.Is(err, mediaregistry.ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			assertTmpEmpty(t, dir)
			if _, ok, _ := c.Lookup(context.Background(), "wa_x"); ok {
				t.Fatal("a capped download was indexed")
			}
		})
	}
}

// What the channel leaves in the file after seeking, rewriting and
// truncating (download encrypted, decrypt in place) is what is hashed,
// sniffed and kept.
func TestStoreFileKeepsWhatTheChannelLeft(t *testing.T) {
	storetest.Each(t, testStoreFileKeepsWhatTheChannelLeft)
}

func testStoreFileKeepsWhatTheChannelLeft(t *testing.T, db store.Config) {
	c, _ := openCache(t, db)
	want := []byte("%PDF-1.4 final bytes")
	e, err := c.StoreFile(context.Background(), "wa_y", "application/pdf", 64, func(f mediaregistry.File) error {
		if _, err := f.Write(bytes.Repeat([]byte{0xAA}, 60)); err != nil { // "ciphertext"
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := f.WriteAt(want, 0); err != nil {
			return err
		}
		return f.Truncate(int64(len(want)))
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(want)
	if e.SHA256 != hex.EncodeToString(sum[:]) || e.Size != int64(len(want)) || e.MIME != "application/pdf" {
		t.Fatalf("entry = %+v", e)
	}
	got, err := os.ReadFile(c.Path(e.SHA256))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("cached bytes = %q, %v", got, err)
	}
}

func TestStoreFileChannelFailureKeepsNothing(t *testing.T) {
	storetest.Each(t, testStoreFileChannelFailureKeepsNothing)
}

func testStoreFileChannelFailureKeepsNothing(t *testing.T, db store.Config) {
	c, dir := openCache(t, db)
	boom := errors.New("network gone")
	_, err := c.StoreFile(context.Background(), "wa_z", "", 100, func(f mediaregistry.File) error {
		f.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	assertTmpEmpty(t, dir)
}

// A download's type is sniffed from the whole file: an Office file that a
// channel declares as a generic type is cached as the document it is,
// whether it streams in (Store) or is written in place (StoreFile).
func TestCachedOfficeFileKeepsItsType(t *testing.T) {
	storetest.Each(t, testCachedOfficeFileKeepsItsType)
}

func testCachedOfficeFileKeepsItsType(t *testing.T, db store.Config) {
	const xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "xl/workbook.xml", "xl/worksheets/sheet1.xml"} {
		f, _ := w.Create(name)
		f.Write([]byte("<x/>"))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	c, _ := openCache(t, db)
	ctx := context.Background()
	cases := []struct {
		name, ref, declared string
		store               func(ref, declared string) (mediaregistry.Entry, error)
	}{
		{"streamed, declared octet-stream", "tg_office1", "application/octet-stream", func(ref, declared string) (mediaregistry.Entry, error) {
			return c.Store(ctx, ref, declared, bytes.NewReader(data), 1<<20)
		}},
		{"written in place, declared zip", "wa_office2", "application/zip", func(ref, declared string) (mediaregistry.Entry, error) {
			return c.StoreFile(ctx, ref, declared, 1<<20, func(f mediaregistry.File) error {
				_, err := f.Write(data)
				return err
			})
		}},
		{"streamed, nothing declared", "sl_office3", "", func(ref, declared string) (mediaregistry.Entry, error) {
			return c.Store(ctx, ref, declared, bytes.NewReader(data), 1<<20)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tc.store(tc.ref, tc.declared)
			if err != nil {
				t.Fatal(err)
			}
			if e.MIME != xlsx {
				t.Errorf("cached as %q, want %q", e.MIME, xlsx)
			}
		})
	}
}
