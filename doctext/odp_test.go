package doctext

import (
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

const mimeODP = "application/vnd.oasis.opendocument.presentation"

// odpSlide is a draw:page of frames (their text-box contents) and notes.
func odpSlide(notes string, frames ...string) string {
	var b strings.Builder
	b.WriteString(`<draw:page draw:name="page">`)
	for _, f := range frames {
		if strings.HasPrefix(f, "<table:table") {
			b.WriteString(`<draw:frame>` + f + `</draw:frame>`)
			continue
		}
		b.WriteString(`<draw:frame><svg:title>alt text</svg:title><draw:text-box>` + f + `</draw:text-box></draw:frame>`)
	}
	b.WriteString(`<presentation:notes><draw:page-thumbnail draw:page-number="1"/><draw:frame presentation:class="notes"><draw:text-box>` +
		notes + `</draw:text-box></draw:frame></presentation:notes></draw:page>`)
	return b.String()
}

func TestODP(t *testing.T) {
	auto := `<text:list-style style:name="L1">` + numLevel("1", "1", "", ".", "") + numLevel("2", "a", "(", ")", "") + `</text:list-style>`
	table := `<table:table><table:table-row><table:table-cell><text:p>rent</text:p></table:table-cell>` +
		`<table:table-cell><text:p>1200</text:p></table:table-cell></table:table-row></table:table>`
	deck := `<office:presentation>` +
		odpSlide(`<text:p>Say it slowly.</text:p>`, `<text:p>Launch plan</text:p>`,
			odfList(` text:style-name="L1"`, "Write", `<text:list-item><text:p>Tell</text:p>`+odfList("", "customers", "press")+`</text:list-item>`, "Ship"),
			table) +
		odpSlide(`<text:p/>`) +
		odpSlide("", `<text:p>Risks</text:p>`, odfList(` text:style-name="L1"`, "melting servers")) +
		`</office:presentation>`
	data := doctexttest.ODF(mimeODP, auto, deck, "")
	for _, tc := range []struct {
		name, pages, want string
	}{
		{"deck.odp", "", "--- slide 1 ---\nLaunch plan\n1. Write\n2. Tell\n(a) customers\n(b) press\n3. Ship\n| rent | 1200 |\n\nSpeaker notes:\nSay it slowly.\n\n" +
			"--- slide 2 ---\n(no text on this slide)\n\n--- slide 3 ---\nRisks\n1. melting servers"},
		{"deck.bin", "3", "--- slide 3 ---\nRisks\n1. melting servers"},
	} {
		res, err := extract(t, data, tc.name, "application/octet-stream", Options{Pages: tc.pages})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Format != "odp" || res.Unit != "slide" || res.Pages != 3 {
			t.Errorf("%s: format %q, unit %q, %d slides", tc.name, res.Format, res.Unit, res.Pages)
		}
		if got := body(t, res); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}

	res, err := extract(t, doctexttest.ODF(mimeODP, "", `<office:presentation/>`, ""), "empty.odp", mimeODP, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "The presentation has no slides.") {
		t.Errorf("an empty deck: %s", res.Text)
	}
	if Format("talk.odp", "") != "odp" || Format("x", mimeODP) != "odp" {
		t.Errorf("Format: %q, %q", Format("talk.odp", ""), Format("x", mimeODP))
	}
}
