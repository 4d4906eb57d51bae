package doctext

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestXMLBound: what xmlBound passes on is XML a strict decoder accepts,
// with every text run at most maxTextRun bytes (plus the rest of the
// character or entity it was cut after), nothing else changed; markup
// past maxMarkup is refused.
func TestXMLBound(t *testing.T) {
	long := func(unit string) string { return strings.Repeat(unit, maxTextRun/len(unit)+1000) }
	cases := []struct {
		name  string
		in    string
		cut   bool     // a run was cut
		texts []string // the text tokens' prefixes, in order; nil: the input passes unchanged
		err   error
	}{
		{"a document as it is", `<?xml version="1.0"?><!-- c --><!DOCTYPE d [<!ENTITY e "x">]><d a='1>2' b="&quot;">t&amp;<![CDATA[<x>]]></d>`,
			false, nil, nil},
		{"a long run", "<d><t>" + long("abc ") + "</t><t>next</t></d>", true, []string{"abc ", "next"}, nil},
		{"a long run of entities", "<d><t>" + long("&amp;&#233;") + "</t><t>next</t></d>", true, []string{"&é", "next"}, nil},
		{"a long run of accents", "<d><t>" + long("é€😀") + "</t><t>next</t></d>", true, []string{"é€😀", "next"}, nil},
		{"a long CDATA", "<d><t><![CDATA[" + long("]a>b") + "]]></t><t>next</t></d>", true, []string{"]a>b", "next"}, nil},
		{"a long comment", "<d><!--" + long("-") + "--></d>", false, nil, ErrTooLarge},
		{"a long attribute", `<d a="` + long("x") + `"/>`, false, nil, ErrTooLarge},
		{"a long declaration", `<!DOCTYPE d [` + long("<!-- x -->") + `]><d/>`, false, nil, ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			z := &zipDoc{}
			b, err := io.ReadAll(&xmlBound{r: strings.NewReader(tc.in), z: z, name: "x.xml"})
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "x.xml") {
					t.Fatalf("error %v, want %v naming the part", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if z.cut != tc.cut {
				t.Errorf("cut %v, want %v", z.cut, tc.cut)
			}
			if tc.texts == nil {
				if string(b) != tc.in {
					t.Errorf("changed:\n%s\nwant\n%s", b, tc.in)
				}
				return
			}
			d := xml.NewDecoder(strings.NewReader(string(b)))
			var texts []string
			for {
				tok, err := d.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("the decoder refuses what passed: %v", err)
				}
				if c, ok := tok.(xml.CharData); ok {
					if len(c) > maxTextRun+8 || !utf8.Valid(c) {
						t.Errorf("a text run of %d bytes (valid UTF-8: %v)", len(c), utf8.Valid(c))
					}
					texts = append(texts, string(c))
				}
			}
			if len(texts) != len(tc.texts) {
				t.Fatalf("%d text runs, want %d", len(texts), len(tc.texts))
			}
			for i, w := range tc.texts {
				if !strings.HasPrefix(texts[i], w) {
					t.Errorf("run %d: %.40q…, want %q…", i, texts[i], w)
				}
			}
		})
	}
}
