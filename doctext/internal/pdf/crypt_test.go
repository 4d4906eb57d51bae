package pdf

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// TestEncryptedEmptyPassword: files that open without a password are read
// for every revision of the standard security handler, with the empty
// user password or the empty owner password; one that needs a password
// says so.
func TestEncryptedEmptyPassword(t *testing.T) {
	cases := []struct {
		enc  doctexttest.Encryption
		want error
	}{
		{"rc4-40", nil},
		{"rc4-128", nil},
		{"rc4-128-cf", nil},
		{"aes128", nil},
		{"aes256-r5", nil},
		{"aes256", nil},
		{"rc4-40-owner", nil},
		{"rc4-128-owner", nil},
		{"aes128-owner", nil},
		{"aes256-r5-owner", nil},
		{"aes256-owner", nil},
		{"rc4-40-password", ErrEncrypted},
		{"rc4-128-password", ErrEncrypted},
		{"aes128-password", ErrEncrypted},
		{"aes256-r5-password", ErrEncrypted},
		{"aes256-password", ErrEncrypted},
	}
	for _, tc := range cases {
		for _, objStm := range []bool{false, true} {
			name := string(tc.enc)
			if objStm {
				name += ", object streams"
			}
			t.Run(name, func(t *testing.T) {
				data := doctexttest.PDF([]doctexttest.Page{{Lines: []string{"Encrypted but open", "to all"}}},
					doctexttest.PDFOptions{Compress: true, ObjStreams: objStm, Encrypt: tc.enc})
				d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
				if tc.want != nil {
					if !errors.Is(err, tc.want) {
						t.Fatalf("%v, want %v", err, tc.want)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				info, err := d.PageText(context.Background(), 1, 1000)
				if err != nil || info.Text != "Encrypted but open\nto all" {
					t.Errorf("%q %v", info.Text, err)
				}
			})
		}
	}
}
