package format

import (
	"strings"
	"testing"
	"unicode/utf16"
)

// telegramLen is the length Telegram holds to its limit: UTF-16 code units
// of the text it shows.
func telegramLen(t *testing.T, piece string) int {
	t.Helper()
	text, err := TelegramText(piece)
	if err != nil {
		t.Fatalf("Telegram would refuse a piece: %v\n%s", err, piece)
	}
	return len(utf16.Encode([]rune(text)))
}

func TestSplitTelegram(t *testing.T) {
	emoji := strings.Repeat("**bold 😀 words** and _more 🎉 text_ here & <there>. ", 200) // > 4096 units, emoji are 2
	long := strings.Repeat("x", 5000)
	lines := strings.Repeat("fmt.Println(\"line <one>\") // 😀\n", 200)
	for _, tc := range []struct {
		name  string
		md    string
		limit int
		// what each piece must hold: e.g. the code block reopened
		each string
	}{
		{"emoji and styles", emoji, 4096, ""},
		{"5000 char code line", "```go\n" + long + "\n```", 4096, `<pre><code class="language-go">`},
		{"code lines", "```go\n" + lines + "```", 4096, `<pre><code class="language-go">`},
		{"small limit", emoji, 50, ""},
		{"tiny limit", "**😀😀😀😀** [link text](https://x.example/a)", 3, ""},
		{"quote", "> " + strings.Repeat("quoted words go on ", 100), 200, "<blockquote>"},
		{"list", strings.Repeat("- item with **bold text** inside\n", 100), 300, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pieces := Render(tc.md, Telegram, tc.limit)
			if len(pieces) < 2 {
				t.Fatalf("%d pieces, want the text cut", len(pieces))
			}
			var shown strings.Builder
			for i, p := range pieces {
				if n := telegramLen(t, p); n > tc.limit || n == 0 {
					t.Errorf("piece %d is %d UTF-16 units, limit %d", i, n, tc.limit)
				}
				if tc.each != "" && !strings.HasPrefix(p, tc.each) {
					t.Errorf("piece %d does not reopen %s: %.60q", i, tc.each, p)
				}
				text, _ := TelegramText(p)
				shown.WriteString(text)
			}
			// Cuts drop only the white space they were made at.
			whole, err := TelegramText(Render(tc.md, Telegram, 0)[0])
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(strings.Fields(shown.String()), ""), strings.Join(strings.Fields(whole), ""); got != want {
				t.Errorf("pieces lost or changed text: got %d chars, want %d", len(got), len(want))
			}
		})
	}
}

func TestSplitCodeKeepsEveryCharacter(t *testing.T) {
	code := strings.Repeat("a b  c\t", 800) // spaces inside code must survive a cut
	var got strings.Builder
	for _, p := range Render("```\n"+code+"\n```", Telegram, 4096) {
		text, err := TelegramText(p)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(text)
	}
	if got.String() != code {
		t.Errorf("code changed by the cut: %d bytes, want %d", got.Len(), len(code))
	}
}

func TestSplitPrefersParagraphs(t *testing.T) {
	para := strings.Repeat("word ", 60) // 300 characters
	md := para + "\n\n" + para + "\n\n" + para
	pieces := Render(md, Plain, 700)
	if len(pieces) != 2 {
		t.Fatalf("%d pieces, want 2", len(pieces))
	}
	if got := strings.Count(pieces[0], "word"); got != 120 {
		t.Errorf("first piece holds %d words, want the first two paragraphs (120)", got)
	}
}

func TestSplitOtherNetworks(t *testing.T) {
	md := strings.Repeat("Some **bold words here** and `code` and [a link](https://x.example/p?a=1&b=2) & more.\n\n", 80)
	for _, tc := range []struct {
		network Network
		limit   int
		check   func(t *testing.T, p string)
	}{
		{Slack, 500, func(t *testing.T, p string) {
			if strings.Count(p, "*")%2 != 0 || strings.Count(p, "`")%2 != 0 || strings.Count(p, "<") != strings.Count(p, ">") {
				t.Errorf("unbalanced markup in %q", p)
			}
		}},
		{WhatsApp, 300, func(t *testing.T, p string) {
			if strings.Count(p, "*")%2 != 0 {
				t.Errorf("unbalanced bold in %q", p)
			}
		}},
		{Web, 400, func(t *testing.T, p string) {
			if err := webAllowed(p); err != nil {
				t.Error(err)
			}
			if strings.Count(p, "<p>") != strings.Count(p, "</p>") || strings.Count(p, "<strong>") != strings.Count(p, "</strong>") {
				t.Errorf("unbalanced tags in %q", p)
			}
		}},
		{Plain, 300, func(t *testing.T, p string) {}},
	} {
		t.Run(string(tc.network), func(t *testing.T) {
			pieces := Render(md, tc.network, tc.limit)
			if len(pieces) < 2 {
				t.Fatalf("%d pieces, want several", len(pieces))
			}
			for _, p := range pieces {
				if tc.network != Web {
					if n := runes(p); n > tc.limit { // Slack and WhatsApp count the raw text, markup and escapes included
						t.Errorf("piece of %d characters, limit %d: %q", n, tc.limit, p)
					}
				}
				tc.check(t, p)
			}
		})
	}
}
