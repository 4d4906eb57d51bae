package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/groups"
)

// fuzzWorkspace is a group folder with a few real files to name, a file
// just outside it and a symlink leading there, so accepted and refused
// MEDIA: lines both happen while fuzzing.
func fuzzWorkspace(tb testing.TB) groups.Workspace {
	tb.Helper()
	dir := tb.TempDir()
	ws, err := groups.EnsureWorkspace(dir, &groups.Group{Folder: "fam"})
	if err != nil {
		tb.Fatal(err)
	}
	for name, body := range map[string]string{
		"media/chart.png": "\x89PNG\r\n\x1a\n",
		"media/a b.txt":   "spaces",
		"notes.txt":       "n",
	} {
		if err := os.WriteFile(filepath.Join(ws.Root, filepath.FromSlash(name)), []byte(body), 0o640); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("outside"), 0o640); err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(ws.Root, "link.txt")); err != nil {
		tb.Fatal(err)
	}
	return ws
}

// FuzzParseAnswer: whatever the model writes, every path parseAnswer
// returns is a clean relative path naming a regular file inside the group
// folder; MEDIA: lines inside code fences never yield paths; no internal
// note survives into the text; and every MEDIA: line outside a fence is
// either sent or reported, never silently dropped.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		"Here is the chart.\nMEDIA:./media/chart.png",
		"  MEDIA: media/chart.png  \nDone",
		"MEDIA:'media/a b.txt'",
		"MEDIA:../secret.txt",
		"MEDIA:/etc/passwd",
		"MEDIA:~/x",
		"MEDIA:./link.txt",
		"MEDIA:./media",
		"MEDIA:media/../notes.txt",
		"MEDIA:media/../../fam/notes.txt",
		"Write this:\n```\nMEDIA:./media/chart.png\n```",
		"```go\ncode\n```\nMEDIA:./media/chart.png\n```\nMEDIA:notes.txt",
		"<internal>plan</internal>It is noon.\nMEDIA:notes.txt",
		"A\n<INTERNAL>\nMEDIA:notes.txt\n</Internal>\nB",
		"Sure.<internal>half a thought\nMEDIA:notes.txt",
		"<inter<internal>x</internal>nal>leak",
		"<internal><internal>a</internal>b</internal>c",
		"MEDIA:<internal>x</internal>notes.txt",
		"MEDIA:\x00notes.txt",
		"MEDIA:C:\\Windows\\system32",
		"   ```\nMEDIA:notes.txt\n   ```   \nMEDIA:notes.txt",
		// Text after the path, and lines that end in a bare CR.
		`MEDIA: "notes.txt" {"caption": "x"}`,
		`MEDIA: "media/chart.png" and here is why`,
		"MEDIA: \"notes.txt\"\r",
		"MEDIA: \"notes.txt\"\rMEDIA: media/chart.png\rDone",
		"Here.\r\nMEDIA: notes.txt\r\n",
		`MEDIA: notes.txt {"caption": "x"}`,
		"MEDIA: media/a b.txt and why",
		"MEDIA: 'media/a b.txt' (notes)",
		"MEDIA: `notes.txt`MEDIA: notes.txt",
		`MEDIA: "notes.txt`,
		`MEDIA: "../secret.txt" {"caption": "x"}`,
		"MEDIA: a b c d e f g h i j notes.txt",
		"```\rMEDIA: notes.txt\r```",
		// Quotes inside quoted values, leftover JSON.
		`MEDIA: "media/a \"b\", c.txt"`,
		`MEDIA: "say "hi".txt" and`,
		"MEDIA: 'media/a b.txt'\r\nok",
		`MEDIA: notes.txt"}`,
		`MEDIA: ./notes.txt", "caption": "x"}`,
		`MEDIA: "\\\"\"`,
		"See MEDIA: notes.txt here",
		"",
	} {
		f.Add(s)
	}
	ws := fuzzWorkspace(f)
	root, err := filepath.EvalSymlinks(ws.Root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a, refused := parseAnswer(raw, ws)

		if strings.Contains(strings.ToLower(a.Text), "<internal>") {
			t.Fatalf("internal note leaked: %q", a.Text)
		}
		for _, p := range a.Media {
			if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
				t.Fatalf("path %q is not relative", p)
			}
			if filepath.ToSlash(filepath.Clean(filepath.FromSlash(p))) != p {
				t.Fatalf("path %q is not clean", p)
			}
			for _, seg := range strings.Split(p, "/") {
				if seg == ".." {
					t.Fatalf("path %q climbs out", p)
				}
			}
			full := filepath.Join(root, filepath.FromSlash(p))
			fi, err := os.Lstat(full)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("path %q is not a regular file in the folder (%v)", p, err)
			}
		}

		// Model of the fence rule on the text as parseAnswer sees it:
		// after internal notes are gone, every line ended by "\n", "\r\n"
		// or a bare "\r".
		lines := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(raw)
		stripped := internalOpen.ReplaceAllString(internalBlock.ReplaceAllString(lines, ""), "")
		outside := 0
		fenced := false
		for _, line := range strings.Split(stripped, "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "```"):
				fenced = !fenced
			case !fenced && strings.HasPrefix(trimmed, "MEDIA:"):
				outside++
			}
		}
		if got := len(a.Media) + len(refused); got != outside {
			t.Fatalf("%d MEDIA: lines outside fences, %d sent + %d refused", outside, len(a.Media), len(refused))
		}

		// Metamorphic: the same answer wrapped in one fence sends nothing.
		if !strings.Contains(stripped, "```") && !strings.Contains(strings.ToLower(raw), "<internal") {
			w, wr := parseAnswer("```\n"+raw+"\n```", ws)
			if len(w.Media) != 0 || len(wr) != 0 {
				t.Fatalf("fenced answer yielded media %q refused %v", w.Media, wr)
			}
		}
	})
}
