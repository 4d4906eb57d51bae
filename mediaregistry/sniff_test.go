package mediaregistry

import "testing"

var (
	adtsHead = []byte{0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC, 0x21}
	flacHead = []byte("fLaC\x00\x00\x00\x22\x12\x00\x12\x00")
	opusHead = []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x13OpusHead\x01\x01")
	mp3Head  = []byte{0xFF, 0xFB, 0x90, 0x64}
)

// Common formats a peer's media table has: each is sniffed, declared by
// its extension on every machine, and named with its own extension.
func TestCommonFormatsKeepTheirType(t *testing.T) {
	cases := []struct {
		name           string
		head           []byte
		declared, file string
		want, ext      string
	}{
		{"aac declared", adtsHead, "audio/aac", "song.aac", "audio/aac", ".aac"},
		{"aac by name only", adtsHead, "", "song.aac", "audio/aac", ".aac"},
		{"aac with no name", adtsHead, "", "", "audio/aac", ".aac"},
		{"aac is not taken for mp3", adtsHead, "application/octet-stream", "x.bin", "audio/aac", ".aac"},
		{"mp3 stays mp3", mp3Head, "", "", "audio/mpeg", ".mp3"},
		{"flac declared", flacHead, "audio/flac", "take.flac", "audio/flac", ".flac"},
		{"flac by name only", flacHead, "application/octet-stream", "take.flac", "audio/flac", ".flac"},
		{"flac with no name", flacHead, "", "", "audio/flac", ".flac"},
		{"css declared", []byte("body { color: red }\n"), "text/css", "site.css", "text/css", ".css"},
		{"css by name only", []byte("body { color: red }\n"), "", "site.css", "text/css", ".css"},
		{"opus declared audio/opus", opusHead, "audio/opus", "voice.opus", "audio/ogg", ".ogg"},
		{"opus declared as ogg with its codec", opusHead, "audio/ogg; codecs=opus", "voice.opus", "audio/ogg", ".ogg"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideMIME(Declared(tc.declared, tc.file), Sniff(tc.head))
			if got != tc.want || Ext(got) != tc.ext {
				t.Errorf("type = %q (%s), want %q (%s)", got, Ext(got), tc.want, tc.ext)
			}
		})
	}
}

func TestExtensionsMapBothWays(t *testing.T) {
	cases := []struct {
		mime, ext string
	}{
		{"audio/aac", ".aac"},
		{"audio/flac", ".flac"},
		{"text/css", ".css"},
		{"audio/opus", ".opus"},
		{"audio/ogg", ".ogg"},
		{"image/jpeg", ".jpg"},
		{"text/markdown", ".md"},
		{"application/vnd.oasis.opendocument.text", ".odt"},
	}
	for _, tc := range cases {
		t.Run(tc.mime, func(t *testing.T) {
			if got := Ext(tc.mime); got != tc.ext {
				t.Errorf("Ext(%q) = %q, want %q", tc.mime, got, tc.ext)
			}
			if tc.mime == "audio/opus" {
				return // .opus files are Ogg: TypeByExtension says audio/ogg
			}
			if got := TypeByExtension("x" + tc.ext); got != tc.mime {
				t.Errorf("TypeByExtension(x%s) = %q, want %q", tc.ext, got, tc.mime)
			}
		})
	}
	if got := Ext("application/x-unheard-of"); got != ".bin" {
		t.Errorf("unknown type named %q, want .bin", got)
	}
	if got := Ext("text/html"); got != ".html.txt" {
		t.Errorf("HTML named %q, want .html.txt", got)
	}
}

// A name's extension is kept when the type is also known by it: an Opus
// voice note named x.opus stays .opus, not .ogg or .oga.
func TestExtFits(t *testing.T) {
	cases := []struct {
		name, ext, mime string
		fits            bool
	}{
		{"opus named .opus as audio/ogg", ".opus", "audio/ogg", true},
		{"opus named .opus as audio/opus", ".opus", "audio/opus", true},
		{"opus named .OPUS", ".OPUS", "audio/ogg", true},
		{"ogg named .oga", ".oga", "audio/ogg", true},
		{"jpeg named .jpeg", ".jpeg", "image/jpeg", true},
		{"aac named .aac", ".aac", "audio/aac", true},
		{"flac named .flac", ".flac", "audio/flac", true},
		{"css named .css", ".css", "text/css", true},
		{"png named .pdf", ".pdf", "image/png", false},
		{"html named .html", ".html", "text/html", false},
		{"opus named .mp3", ".mp3", "audio/ogg", false},
		{"unknown type named .exe", ".exe", "application/x-msdownload", false},
		{"unknown type named .bin", ".bin", "application/x-msdownload", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExtFits(tc.ext, tc.mime); got != tc.fits {
				t.Errorf("ExtFits(%q, %q) = %v, want %v", tc.ext, tc.mime, got, tc.fits)
			}
		})
	}
}
