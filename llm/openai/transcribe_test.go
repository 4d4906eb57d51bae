package openai

import (
	"strings"
	"testing"
)

func TestFileName(t *testing.T) {
	tests := []struct{ name, mime, want string }{
		{"", "audio/ogg", "audio.ogg"},
		{"voice.oga", "audio/ogg", "voice.oga"},
		{"voice.OPUS", "audio/ogg; codecs=opus", "voice.opus"},
		{"memo.mp3", "audio/ogg", "memo.ogg"}, // the sniffed type wins
		{"song.mp3", "audio/mpeg", "song.mp3"},
		{"clip", "video/mp4", "clip.mp4"},
		{"rec.wav", "audio/x-wav", "rec.wav"},
		{"a.webm", "audio/webm", "a.webm"},
		{"x.aac", "audio/aac", "x.aac"},
		{"C:\\Users\\me\\talk.m4a", "audio/x-m4a", "talk.m4a"},
		{".", "", "audio"},
		{"..", "audio/flac", "audio.flac"},
		{"a\r\nb\".wav", "audio/wav", "a__b.wav"},
		{strings.Repeat("n", 300) + ".mp3", "audio/mpeg", strings.Repeat("n", 64) + ".mp3"},
		{"x.m\"p3", "", "x.mp3"},
	}
	for _, tt := range tests {
		if got := fileName(tt.name, tt.mime); got != tt.want {
			t.Errorf("fileName(%q, %q) = %q, want %q", tt.name, tt.mime, got, tt.want)
		}
	}
}
