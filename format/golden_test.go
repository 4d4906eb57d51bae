package format

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden renders one realistic answer for every network and compares
// it with the file a person checked by eye (go test -update rewrites them).
func TestGolden(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "answer.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		network Network
		file    string
	}{
		{Telegram, "answer.telegram.html"},
		{Slack, "answer.slack.txt"},
		{WhatsApp, "answer.whatsapp.txt"},
		{Web, "answer.web.html"},
		{Plain, "answer.plain.txt"},
	} {
		t.Run(string(tc.network), func(t *testing.T) {
			pieces := Render(string(src), tc.network, 0)
			if len(pieces) != 1 {
				t.Fatalf("Render with no limit gave %d pieces, want 1", len(pieces))
			}
			got := pieces[0] + "\n"
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s differs from its golden file:\n--- got\n%s\n--- want\n%s", tc.network, got, want)
			}
			if tc.network == Telegram {
				if err := TelegramValid(pieces[0]); err != nil {
					t.Errorf("Telegram would refuse the golden answer: %v", err)
				}
			}
			if strings.Contains(got, "**") && tc.network != Web {
				t.Errorf("markdown bold left in %s output", tc.network)
			}
		})
	}
}
