package doctext

import (
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

const mimeODT = "application/vnd.oasis.opendocument.text"

// odfList is a text:list of items; an item starting with "<" is markup
// (a nested list), anything else a paragraph.
func odfList(attrs string, items ...string) string {
	var b strings.Builder
	b.WriteString(`<text:list` + attrs + `>`)
	for _, it := range items {
		if strings.HasPrefix(it, "<") {
			b.WriteString(it)
			continue
		}
		b.WriteString(`<text:list-item><text:p>` + doctexttest.X(it) + `</text:p></text:list-item>`)
	}
	b.WriteString(`</text:list>`)
	return b.String()
}

func numLevel(level, format, prefix, suffix, extra string) string {
	return `<text:list-level-style-number text:level="` + level + `" style:num-format="` + format + `" style:num-prefix="` + prefix +
		`" style:num-suffix="` + suffix + `"` + extra + `/>`
}

func TestODTLists(t *testing.T) {
	auto := `<text:list-style style:name="L1">` + numLevel("1", "1", "", ".", "") + numLevel("2", "a", "", ")", "") +
		numLevel("3", "i", "", ".", ` text:display-levels="3"`) + `</text:list-style>` +
		`<text:list-style style:name="L2"><text:list-level-style-bullet text:level="1" text:bullet-char="-"/></text:list-style>` +
		`<style:style style:name="P9" style:family="paragraph" style:parent-style-name="Steps"/>`
	// styles.xml: a list style named by a paragraph style's parent.
	styles := `<text:list-style style:name="Chapters">` + numLevel("1", "I", "Chapter ", ":", ` text:start-value="4"`) + `</text:list-style>` +
		`<style:style style:name="Steps" style:family="paragraph" style:list-style-name="Chapters"/>`
	nested := `<text:list-item><text:p>Open</text:p>` + odfList("", "first sub", "second sub",
		`<text:list-item><text:p>third sub</text:p>`+odfList("", "deep")+`</text:list-item>`) + `</text:list-item>`
	doc := `<office:text><text:p>Steps:</text:p>` +
		odfList(` text:style-name="L1" xml:id="list1"`, `<text:list-header><text:p>Header, no number</text:p></text:list-header>`,
			nested, "Close", `<text:list-item><text:p/></text:list-item>`, "After an empty item") +
		odfList(` text:style-name="L2"`, "a bullet") +
		odfList(` text:style-name="L1" text:continue-list="list1"`, "Continues") +
		odfList(` text:style-name="L1"`, "Restarted", `<text:list-item text:start-value="7"><text:p>Seven</text:p></text:list-item>`, "Eight") +
		odfList(` text:style-name="L1" text:continue-numbering="true"`, "Nine") +
		`<text:list><text:list-item><text:p text:style-name="P9">Through a paragraph style</text:p></text:list-item></text:list>` +
		odfList(` text:style-name="Nowhere"`, "An unknown style") +
		`</office:text>`
	res, err := extract(t, doctexttest.ODF(mimeODT, auto, doc, styles), "steps.odt", "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Steps:\nHeader, no number\n1. Open\na) first sub\nb) second sub\nc) third sub\n1.c.i. deep\n2. Close\n" +
		"4. After an empty item\n• a bullet\n5. Continues\n1. Restarted\n7. Seven\n8. Eight\n9. Nine\n" +
		"Chapter IV: Through a paragraph style\n• An unknown style"
	if got := body(t, res); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
