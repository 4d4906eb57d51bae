package web

import (
	"archive/zip"
	"bytes"
	"net/http"
	"testing"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/mediaregistry"
)

// officeZip is a minimal OOXML package whose main part is at main.
func officeZip(t *testing.T, main string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "_rels/.rels", main} {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("<x/>"))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An Office file a browser posts as x.bin, or under a name without an
// extension, is announced as the document it is, not as a zip.
func TestOfficeUploadUnderAnyNameKeepsItsType(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	csrf := h.roomCSRF(c, "main")
	cases := []struct {
		name string
		up   upload
		want string
	}{
		{"docx as x.bin", upload{"x.bin", "application/octet-stream", officeZip(t, "word/document.xml")},
			"application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		{"xlsx with no extension", upload{"budget", "application/octet-stream", officeZip(t, "xl/workbook.xml")},
			"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
		{"pptx declared as a zip", upload{"deck.zip", "application/zip", officeZip(t, "ppt/presentation.xml")},
			"application/vnd.openxmlformats-officedocument.presentationml.presentation"},
		{"a plain zip stays a zip", upload{"x.bin", "application/octet-stream", officeZip(t, "data/notes.txt")},
			"application/zip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.post(c, "main", csrf, "Ann", "", tc.up)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			in := h.sink.Next(t)
			chantest.CheckInbound(t, h.reg, in, true)
			ps := mediaregistry.Parse(in.Text)
			if len(ps) != 1 || ps[0].MIME != tc.want {
				t.Fatalf("placeholder %q, want type %s", in.Text, tc.want)
			}
		})
	}
}
