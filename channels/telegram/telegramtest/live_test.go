package telegramtest

import (
	"net/http"
	"strings"
	"testing"
)

// The fake answers what the Bot API answers for a text: the parse check
// is format's (tested there), the empty and length checks are the fake's.
func TestCheckText(t *testing.T) {
	cases := []struct {
		text, mode string
		limit      int
		bad        string // part of the description; "" when accepted
	}{
		{"plain", "", 10, ""},
		{"<b>bold</b> &amp; &lt;x&gt;", "HTML", 10, ""},
		{"<b>x", "HTML", 10, "can't parse entities"},
		{"<div>x</div>", "HTML", 10, "Unsupported start tag"},
		{"a <b", "", 10, ""}, // no parse mode: shown as written
		{"   ", "", 10, "message text is empty"},
		{"<b> </b>", "HTML", 10, "message text is empty"},
		{"<b>0123456789</b>", "HTML", 10, ""}, // tags do not count
		{"01234567890", "", 10, "message is too long"},
		{"😀😀😀😀😀😀", "", 10, "message is too long"}, // 12 UTF-16 units
		{"😀😀😀😀😀", "", 10, ""},
	}
	for _, c := range cases {
		f, refused := checkText(c.text, c.mode, c.limit)
		switch {
		case c.bad == "" && refused:
			t.Errorf("%q (%s): refused %q, want accepted", c.text, c.mode, f.Description)
		case c.bad != "" && (!refused || f.Status != http.StatusBadRequest || !strings.Contains(f.Description, c.bad)):
			t.Errorf("%q (%s): %+v, want 400 about %q", c.text, c.mode, f, c.bad)
		}
	}
}

func TestVisibleOf(t *testing.T) {
	if got := visibleOf(Sent{Text: `<b>a</b> &lt;&amp;&gt; <a href="u">l</a>`, ParseMode: "HTML"}); got != "a <&> l" {
		t.Errorf("visible %q", got)
	}
	if got := visibleOf(Sent{Text: "<b>a</b>"}); got != "<b>a</b>" {
		t.Errorf("plain text changed: %q", got)
	}
}
