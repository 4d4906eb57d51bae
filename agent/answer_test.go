package agent

import (
	"context"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/agent/outboxdb"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/llm"
)

func testWorkspace(t *testing.T) groups.Workspace {
	t.Helper()
	dir := t.TempDir()
	ws, err := groups.EnsureWorkspace(dir, &groups.Group{Folder: "fam"})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws.Root, "media", "chart.png"), tinyPNG(t, green()), 0o640)
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("outside"), 0o640)
	os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(ws.Root, "link.txt"))
	return ws
}

func TestParseAnswer(t *testing.T) {
	ws := testWorkspace(t)
	cases := []struct {
		name      string
		raw       string
		wantText  string
		wantMedia []string
		refused   int
	}{
		{"plain", "Hello there.", "Hello there.", nil, 0},
		{"internal stripped", "<internal>they want the time</internal>It is noon.", "It is noon.", nil, 0},
		{"internal multiline and case", "A\n<INTERNAL>\nsecret\nplan\n</Internal>\nB", "A\n\nB", nil, 0},
		{"unclosed internal hides the rest", "Sure.<internal>half a thought", "Sure.", nil, 0},
		{"only internal is empty", "<internal>nothing to say</internal>\n", "", nil, 0},
		{"empty", "   \n ", "", nil, 0},
		{"media line", "Here is the chart.\nMEDIA:./media/chart.png", "Here is the chart.", []string{"media/chart.png"}, 0},
		{"media without dot slash and spaces", "  MEDIA: media/chart.png  \nDone", "Done", []string{"media/chart.png"}, 0},
		{"media only", "MEDIA:./media/chart.png", "", []string{"media/chart.png"}, 0},
		{"parent refused", "Take this.\nMEDIA:../secret.txt", "Take this.\n\n(I could not send the file ../secret.txt.)", nil, 1},
		{"absolute refused", "MEDIA:/etc/passwd", "(I could not send the file /etc/passwd.)", nil, 1},
		{"home refused", "MEDIA:~/x", "(I could not send the file ~/x.)", nil, 1},
		{"symlink out refused", "MEDIA:./link.txt", "(I could not send the file ./link.txt.)", nil, 1},
		{"missing refused", "MEDIA:./media/nope.png", "(I could not send the file ./media/nope.png.)", nil, 1},
		{"directory refused", "MEDIA:./media", "(I could not send the file ./media.)", nil, 1},
		{"fenced media ignored", "Write this:\n```\nMEDIA:./media/chart.png\n```", "Write this:\n```\nMEDIA:./media/chart.png\n```", nil, 0},
		{"after fence media works", "```\ncode\n```\nMEDIA:./media/chart.png", "```\ncode\n```", []string{"media/chart.png"}, 0},
	}
	voice := []struct {
		name, raw, wantText string
		wantVoice           bool
	}{
		{"voice tag alone on a line", "[[audio_as_voice]]\nHappy birthday, Anna!", "Happy birthday, Anna!", true},
		{"voice tag inline", "Happy birthday! [[audio_as_voice]]", "Happy birthday!", true},
		{"voice tag in a fence is text", "```\n[[audio_as_voice]]\n```", "```\n[[audio_as_voice]]\n```", false},
		{"no tag", "Hello.", "Hello.", false},
	}
	for _, c := range voice {
		t.Run(c.name, func(t *testing.T) {
			a, _ := parseAnswer(c.raw, ws)
			if a.Text != c.wantText || a.Voice != c.wantVoice {
				t.Errorf("text %q voice %v, want %q %v", a.Text, a.Voice, c.wantText, c.wantVoice)
			}
		})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, refused := parseAnswer(c.raw, ws)
			if a.Text != c.wantText {
				t.Errorf("text = %q, want %q", a.Text, c.wantText)
			}
			if !slices.Equal(a.Media, c.wantMedia) {
				t.Errorf("media = %q, want %q", a.Media, c.wantMedia)
			}
			if len(refused) != c.refused {
				t.Errorf("refused = %v, want %d", refused, c.refused)
			}
		})
	}
}

// End to end through a run: files in the group folder are sent, the text
// becomes their caption; refused paths are mentioned, never sent.
func TestAnswerFilesAreSent(t *testing.T) {
	cases := []struct {
		name      string
		answer    string
		wantTexts []string
		wantFiles []string // base names
		caption   string
	}{
		{"one file with caption", "Here is the chart.\nMEDIA:./media/chart.png", nil, []string{"chart.png"}, "Here is the chart."},
		{"two files after the text", "Both.\nMEDIA:./media/chart.png\nMEDIA:media/notes.txt", []string{"Both."}, []string{"chart.png", "notes.txt"}, ""},
		{"refused paths", "Sure.\nMEDIA:../x\nMEDIA:/etc/passwd\nMEDIA:~/x", []string{"Sure.\n\n(I could not send the file ../x.)\n(I could not send the file /etc/passwd.)\n(I could not send the file ~/x.)"}, nil, ""},
		{"fenced", "```\nMEDIA:./media/chart.png\n```", []string{"```\nMEDIA:./media/chart.png\n```"}, nil, ""},
		{"internal and empty", "<internal>nobody asked me</internal>", nil, nil, ""},
		{"hard link to a file outside", "Here.\nMEDIA:media/db.png", []string{"Here.\n\n(I could not send the file media/db.png.)"}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
				return textResult(c.answer), nil
			})
			h := newHarness(t, f, nil)
			media := filepath.Join(h.groupsDir, "family", "media")
			os.MkdirAll(media, 0o750)
			os.WriteFile(filepath.Join(media, "chart.png"), tinyPNG(t, green()), 0o640)
			os.WriteFile(filepath.Join(media, "notes.txt"), []byte("notes"), 0o640)
			// A local process links the daemon's database into the folder.
			if err := os.Link(filepath.Join(h.groupsDir, "..", "botd.db"), filepath.Join(media, "db.png")); err != nil {
				t.Fatal(err)
			}
			h.start()
			h.say(famChat, "Alice", "@Andy send it")
			h.idle()
			if got := sentTexts(h.tg.Sent()); !slices.Equal(got, c.wantTexts) {
				t.Errorf("texts = %q, want %q", got, c.wantTexts)
			}
			var names []string
			for _, f := range h.tg.Files() {
				names = append(names, filepath.Base(f.Path))
				if f.Caption != c.caption {
					t.Errorf("caption of %s = %q, want %q", f.Path, f.Caption, c.caption)
				}
				if f.Chat != famChat || f.MIME == "" {
					t.Errorf("file sent as %+v", f.OutMedia)
				}
			}
			if !slices.Equal(names, c.wantFiles) {
				t.Errorf("files = %q, want %q", names, c.wantFiles)
			}
			if h.cursor("family") != h.lastSeq(famChat) {
				t.Error("cursor not advanced")
			}
			if c.wantTexts == nil && c.wantFiles == nil {
				if n, _ := outboxdb.New(h.st).Pending(context.Background(), ""); len(n) != 0 {
					t.Error("an empty answer left an outbox row")
				}
			}
			for _, f := range h.tg.Files() {
				if !strings.HasPrefix(f.Path, h.groupsDir) {
					t.Errorf("sent a file outside the groups dir: %s", f.Path)
				}
			}
		})
	}
}

func green() color.Color { return color.RGBA{G: 200, A: 255} }

// A MEDIA: line sends the file it names whatever follows the path — JSON,
// prose — and however the line ends; what follows is kept as text of the
// answer, in its place, so nothing the model wrote is lost.
func TestParseAnswerMediaLineVectors(t *testing.T) {
	ws := testWorkspace(t)
	for _, name := range []string{"photo.jpg", "a.png", "media/a b.txt", "media/a"} {
		if err := os.WriteFile(filepath.Join(ws.Root, filepath.FromSlash(name)), []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name      string
		raw       string
		wantText  string
		wantMedia []string
		refused   int
	}{
		{"quoted path then json", `MEDIA: "photo.jpg" {"caption": "x"}`, `{"caption": "x"}`, []string{"photo.jpg"}, 0},
		{"quoted path then prose", `MEDIA: "a.png" and here is why`, "and here is why", []string{"a.png"}, 0},
		{"quoted path then a bare CR", "MEDIA: \"a.png\"\r", "", []string{"a.png"}, 0},
		{"bare CR ends the line", "MEDIA: \"a.png\"\rHere it is.", "Here it is.", []string{"a.png"}, 0},
		{"bare CRs between lines", "Look.\rMEDIA: a.png\rMEDIA: photo.jpg\rDone.", "Look.\nDone.", []string{"a.png", "photo.jpg"}, 0},
		{"CRLF lines", "Look.\r\nMEDIA: a.png\r\nDone.\r\n", "Look.\nDone.", []string{"a.png"}, 0},
		{"single quotes then text", `MEDIA: 'media/a b.txt' (the notes)`, "(the notes)", []string{"media/a b.txt"}, 0},
		{"backticks then text", "MEDIA: `a.png` - the logo", "- the logo", []string{"a.png"}, 0},
		{"text keeps its place", "First.\nMEDIA: \"a.png\" the logo\nLast.", "First.\nthe logo\nLast.", []string{"a.png"}, 0},
		{"unquoted path then json", `MEDIA: photo.jpg {"caption": "x"}`, `{"caption": "x"}`, []string{"photo.jpg"}, 0},
		{"unquoted path then prose", "MEDIA: ./a.png and here is why", "and here is why", []string{"a.png"}, 0},
		{"unquoted path with a space", "MEDIA: media/a b.txt", "", []string{"media/a b.txt"}, 0},
		{"unquoted path with a space then prose", "MEDIA: media/a b.txt is the file", "is the file", []string{"media/a b.txt"}, 0},
		{"quoted missing file then text", `MEDIA: "nope.png" here`, "here\n\n(I could not send the file nope.png.)", nil, 1},
		{"quoted path out of the folder then text", `MEDIA: "../secret.txt" {"caption": "x"}`, "{\"caption\": \"x\"}\n\n(I could not send the file ../secret.txt.)", nil, 1},
		{"unquoted missing file keeps the line in the note", "MEDIA: nope.png and why", "(I could not send the file nope.png and why.)", nil, 1},
		{"unclosed quote", `MEDIA: "a.png`, "", []string{"a.png"}, 0},
		{"prose past the tries is not searched", "MEDIA: w1 w2 w3 w4 w5 w6 w7 w8 w9 a.png", "(I could not send the file w1 w2 w3 w4 w5 w6 w7 w8 w9 a.png.)", nil, 1},
		{"fenced stays text", "```\nMEDIA: \"a.png\" and why\n```", "```\nMEDIA: \"a.png\" and why\n```", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, refused := parseAnswer(c.raw, ws)
			if a.Text != c.wantText || !slices.Equal(a.Media, c.wantMedia) || len(refused) != c.refused {
				t.Errorf("text %q media %q refused %v\nwant text %q media %q refused %d", a.Text, a.Media, refused, c.wantText, c.wantMedia, c.refused)
			}
		})
	}
}

// MEDIA: lines as people (and models) write them: quoted values holding
// quotes, commas and spaces, CR and CRLF line endings, a path with the
// JSON it was copied out of still behind it. The final answer and the
// live one read them through the same walk (walkAnswer).
func TestParseAnswerMediaLinesAsWritten(t *testing.T) {
	ws := testWorkspace(t)
	for _, name := range []string{`a "b", c.png`, "x y.jpg", "a.png", "photo.jpg", `say "hi".png`, "it's.png",
		"media/a b.txt", "a, b.png", `back\slash.png`, "media/x.png"} {
		if err := os.WriteFile(filepath.Join(ws.Root, filepath.FromSlash(name)), []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name      string
		raw       string
		wantText  string
		wantMedia []string
		refused   int
	}{
		{"escaped quotes and a comma", `MEDIA: "a \"b\", c.png"`, "", []string{`a "b", c.png`}, 0},
		{"escaped quotes then text", `MEDIA: "a \"b\", c.png" is the one`, "is the one", []string{`a "b", c.png`}, 0},
		{"unescaped inner quotes", `MEDIA: "say "hi".png"`, "", []string{`say "hi".png`}, 0},
		{"single quotes with a space", `MEDIA: 'x y.jpg'`, "", []string{"x y.jpg"}, 0},
		{"double quotes holding an apostrophe", `MEDIA: "it's.png"`, "", []string{"it's.png"}, 0},
		{"quoted comma", `MEDIA: "a, b.png"`, "", []string{"a, b.png"}, 0},
		{"unquoted comma", `MEDIA: a, b.png`, "", []string{"a, b.png"}, 0},
		{"no space after the colon", `MEDIA:"x y.jpg"`, "", []string{"x y.jpg"}, 0},
		{"CRLF endings", "Here.\r\nMEDIA: 'x y.jpg'\r\nMEDIA: \"a \\\"b\\\", c.png\"\r\nBye.\r\n", "Here.\nBye.", []string{"x y.jpg", `a "b", c.png`}, 0},
		{"lone CR endings", "Here.\rMEDIA: photo.jpg\rMEDIA: 'x y.jpg'\rBye.", "Here.\nBye.", []string{"photo.jpg", "x y.jpg"}, 0},
		{"CR right after the path", "MEDIA: media/a b.txt\r", "", []string{"media/a b.txt"}, 0},
		{"leftover JSON after an unquoted path", `MEDIA: media/x.png"}`, "", []string{"media/x.png"}, 0},
		{"leftover JSON with more fields", `MEDIA: ./a.png", "caption": "the logo"}`, `"caption": "the logo"}`, []string{"a.png"}, 0},
		{"leftover JSON after a quoted path", `MEDIA: "photo.jpg"}`, "", []string{"photo.jpg"}, 0},
		{"leftover JSON array", `MEDIA: "photo.jpg"]}`, "", []string{"photo.jpg"}, 0},
		{"leftover JSON, path refused", `MEDIA: /tmp/x.png"}`, "(I could not send the file /tmp/x.png.)", nil, 1},
		{"leftover JSON, missing file", `MEDIA: ./nope.png"}`, "(I could not send the file ./nope.png.)", nil, 1},
		{"MEDIA: in the middle of text stays text", "See MEDIA: a.png for it", "See MEDIA: a.png for it", nil, 0},
		{"MEDIA: after prose on the line stays text", `The file is "MEDIA: a.png".`, `The file is "MEDIA: a.png".`, nil, 0},
		{"lower case is text", "media: a.png", "media: a.png", nil, 0},
		{"indented", "   MEDIA: a.png   ", "", []string{"a.png"}, 0},
		{"escaped quote out of the folder", `MEDIA: "..\"/x.png"`, `(I could not send the file .."/x.png.)`, nil, 1},
		{"quoted climb refused, text kept", `MEDIA: "../secret.txt", here`, "here\n\n(I could not send the file ../secret.txt.)", nil, 1},
		{"empty value", "MEDIA:", "(I could not send the file .)", nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, refused := parseAnswer(c.raw, ws)
			if a.Text != c.wantText || !slices.Equal(a.Media, c.wantMedia) || len(refused) != c.refused {
				t.Errorf("text %q media %q refused %v\nwant text %q media %q refused %d", a.Text, a.Media, refused, c.wantText, c.wantMedia, c.refused)
			}
			// The live answer, read through the same walk, never shows a
			// line the final answer does not keep.
			vis, _ := visibleSoFar(c.raw + "\n")
			for _, l := range strings.Split(vis, "\n") {
				if l != "" && !slices.Contains(strings.Split(a.Text, "\n"), l) {
					t.Errorf("live shows %q, not in the final answer %q", l, a.Text)
				}
			}
		})
	}
}
