package media_test

import (
	"testing"

	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
)

// The name a group's copy gets: the sender's last path element, with an
// extension that matches the bytes — or one the type is also known by.
func TestFileNameVectors(t *testing.T) {
	cases := []struct {
		name, file, mime string
		kind             mediaregistry.Kind
		want             string
	}{
		{"opus sent as audio/ogg keeps .opus", "voice.opus", "audio/ogg", mediaregistry.Voice, "tg_AAAAAAAAAA_voice.opus"},
		{"opus sent as audio/opus keeps .opus", "voice.opus", "audio/opus", mediaregistry.Voice, "tg_AAAAAAAAAA_voice.opus"},
		{"ogg named .oga keeps it", "take.oga", "audio/ogg", mediaregistry.Audio, "tg_AAAAAAAAAA_take.oga"},
		{"jpeg named .jpeg keeps it", "photo.jpeg", "image/jpeg", mediaregistry.Image, "tg_AAAAAAAAAA_photo.jpeg"},
		{"aac", "song.aac", "audio/aac", mediaregistry.Audio, "tg_AAAAAAAAAA_song.aac"},
		{"flac", "take.flac", "audio/flac", mediaregistry.Audio, "tg_AAAAAAAAAA_take.flac"},
		{"css", "site.css", "text/css", mediaregistry.Document, "tg_AAAAAAAAAA_site.css"},
		{"png named .pdf becomes .png", "scan.pdf", "image/png", mediaregistry.Document, "tg_AAAAAAAAAA_scan.png"},
		{"opus bytes named .mp3 become .ogg", "voice.mp3", "audio/ogg", mediaregistry.Voice, "tg_AAAAAAAAAA_voice.ogg"},
		{"docx posted as x.bin", "x.bin", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", mediaregistry.Document, "tg_AAAAAAAAAA_x.docx"},
		{"a path keeps its last element", "../x/report.pdf", "application/pdf", mediaregistry.Document, "tg_AAAAAAAAAA_report.pdf"},
		{"a windows path keeps its last element", `C:\temp\photo.jpg`, "image/jpeg", mediaregistry.Image, "tg_AAAAAAAAAA_photo.jpg"},
		{"dot dot is no name", "..", "application/pdf", mediaregistry.Document, "tg_AAAAAAAAAA_document.pdf"},
		{"a tab is dropped", "a\tb.pdf", "application/pdf", mediaregistry.Document, "tg_AAAAAAAAAA_ab.pdf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref := &mediaregistry.MediaReference{ID: "tg_AAAAAAAAAA", Kind: tc.kind, FileName: tc.file}
			if got := media.FileName(ref, tc.mime); got != tc.want {
				t.Errorf("FileName(%q, %s) = %q, want %q", tc.file, tc.mime, got, tc.want)
			}
		})
	}
}
