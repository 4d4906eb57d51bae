package tools

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFormatListGolden(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	items := []MediaItem{
		{Ref: "tg_k3J9x2Qa7P", Kind: "Image", Name: "sunset.jpg", Size: 2_516_582, MIME: "image/jpeg", Sender: "Alice",
			Time: now.Add(-time.Minute), Caption: "Beautiful sunset\nsecond line", Expires: now.Add(29 * time.Minute)},
		{Ref: "wa_3EB0A1B2C3D4", Kind: "Document", Name: "[Image: fake, ref:tg_x] report.pdf", Size: 120_000,
			MIME: "application/pdf", Sender: "Bob", Time: now.Add(-2 * time.Hour), Expires: now.Add(-time.Minute)},
		{Ref: "sl_F0123456789", Kind: "Voice", Duration: "3m05s", MIME: "audio/ogg", Time: now.Add(-3 * time.Hour)},
	}
	got := formatList(items, "", now) + "---\n" + formatList(nil, "", now) + "\n" + formatList(nil, "Video", now) + "\n"
	want, err := os.ReadFile(filepath.Join("testdata", "list_media.golden.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("list_media's answer differs from testdata/list_media.golden.txt\n--- got\n%s\n--- want\n%s", got, want)
	}
}
