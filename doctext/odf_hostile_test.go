package doctext

import (
	"fmt"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// TestHostileODFLists: list styles and lists built to loop, overflow or
// nest without end stay inside the document's budgets and still read.
func TestHostileODFLists(t *testing.T) {
	deepLevels := ""
	for i := 1; i <= 12; i++ { // ODF has 10 levels; 11 and 12 are not read
		deepLevels += numLevel(fmt.Sprint(i), "1", "", ".", ` text:display-levels="12"`)
	}
	nested := "leaf"
	for range 200 {
		nested = odfList("", `<text:list-item><text:p>x</text:p>`+nested+`</text:list-item>`)
	}
	nested = strings.Replace(nested, "<text:list>", `<text:list text:style-name="Deep">`, 1)
	nested = strings.Replace(nested, "leaf", `<text:list><text:list-item><text:p>leaf</text:p></text:list-item></text:list>`, 1)
	var many strings.Builder
	for i := range maxODFListStyles + 100 {
		fmt.Fprintf(&many, `<text:list-style style:name="M%d">%s</text:list-style>`, i, numLevel("1", "A", "", ".", ""))
	}
	cases := []struct {
		name, auto, body string
		want             []string // lines the text has
	}{
		{"a huge start value", `<text:list-style style:name="H">` +
			numLevel("1", "I", "", ".", ` text:start-value="99999999999999999999"`) + numLevel("2", "i", "", ".", ` text:start-value="1048575"`) +
			`</text:list-style>`,
			odfList(` text:style-name="H"`, `<text:list-item text:start-value="4294967296"><text:p>one</text:p>`+
				odfList("", "past roman")+`</text:list-item>`, `<text:list-item text:start-value="3998"><text:p>late</text:p></text:list-item>`, "later", "latest"),
			[]string{"I. one", "1048575. past roman", "MMMCMXCVIII. late", "MMMCMXCIX. later", "4000. latest"}},
		{"a loop of paragraph styles", `<style:style style:name="A" style:parent-style-name="B"/><style:style style:name="B" style:parent-style-name="A"/>` +
			`<style:style style:name="S" style:parent-style-name="S"/>`,
			`<text:list><text:list-item><text:p text:style-name="A">looped</text:p></text:list-item>` +
				`<text:list-item><text:p text:style-name="S">self</text:p></text:list-item></text:list>`,
			[]string{"• looped", "• self"}},
		{"a list continuing itself", `<text:list-style style:name="L">` + numLevel("1", "1", "", ".", "") + `</text:list-style>`,
			odfList(` text:style-name="L" xml:id="me" text:continue-list="me"`, "a", "b") +
				odfList(` text:style-name="L" xml:id="me" text:continue-list="me"`, "c"),
			[]string{"1. a", "2. b", "3. c"}},
		{"nesting past the levels", `<text:list-style style:name="Deep">` + deepLevels + `</text:list-style>`, nested,
			[]string{"1.1.1.1.1.1.1.1.1.1. x", "1.1.1.1.1.1.1.1.1.191. x", "1.1.1.1.1.1.1.1.1.192. leaf"}},
		{"a long prefix and more list styles than are kept", `<text:list-style style:name="P">` +
			numLevel("1", "1", strings.Repeat("→", 5000), "", "") + `</text:list-style>` + many.String(),
			odfList(` text:style-name="M0"`, "kept") + odfList(` text:style-name="M4999"`, "dropped") + odfList(` text:style-name="P"`, "long"),
			[]string{"A. kept", "• dropped", strings.Repeat("→", maxODFAffix/3) + "1 long"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, kind := range []string{"odt", "odp"} {
				mime, content := mimeODT, `<office:text>`+tc.body+`</office:text>`
				if kind == "odp" {
					mime, content = mimeODP, `<office:presentation>`+odpSlide("", tc.body)+`</office:presentation>`
				}
				res, err := extract(t, doctexttest.ODF(mime, tc.auto, content, ""), "hostile."+kind, "", Options{MaxChars: 1 << 20})
				if err != nil {
					t.Fatalf("%s: %v", kind, err)
				}
				lines := map[string]bool{}
				for _, l := range strings.Split(body(t, res), "\n") {
					lines[l] = true
				}
				for _, w := range tc.want {
					if !lines[w] {
						t.Errorf("%s: no line %q in\n%.2000s", kind, w, body(t, res))
					}
				}
			}
		})
	}
}
