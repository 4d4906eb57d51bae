package webpage

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
)

// xmlEncoding is the encoding an XML declaration names; XHTML pages
// declare it there rather than in a <meta>.
var xmlEncoding = regexp.MustCompile(`^<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']`)

// decode turns the page's bytes into UTF-8.
func decode(data []byte, contentType string) ([]byte, error) {
	enc, name, certain := charset.DetermineEncoding(data, contentType)
	if !certain {
		// DetermineEncoding looks at the first 1024 bytes only: a page
		// whose first non-ASCII byte comes later falls to its
		// Windows-1252 default. A <meta> found in those bytes stands;
		// otherwise the XML declaration, then the whole page's bytes,
		// decide.
		if !hasMeta(data) {
			if e, ok := declaredXML(data); ok {
				enc, name = e, "the encoding its XML declaration names"
			} else if name == "windows-1252" && utf8.Valid(data) {
				enc, name = unicode.UTF8, "utf-8"
			}
		}
	}
	if enc == encoding.Nop || name == "utf-8" {
		// UTF-8 needs no transcoding; invalid bytes become U+FFFD in
		// the text, as the parser leaves them.
		return data, nil
	}
	out, err := enc.NewDecoder().Bytes(data)
	if err != nil {
		return nil, fmt.Errorf("decoding the page from %s: %w", name, err)
	}
	return out, nil
}

// declaredXML is the encoding named by an XML declaration at the start of
// data, if any names one that is known.
func declaredXML(data []byte) (encoding.Encoding, bool) {
	m := xmlEncoding.FindSubmatch(data[:min(len(data), 200)])
	if m == nil {
		return nil, false
	}
	e, _ := charset.Lookup(string(m[1]))
	return e, e != nil
}

// hasMeta tells whether the page's first 1024 bytes declare a charset,
// which DetermineEncoding then trusted without calling it certain.
func hasMeta(data []byte) bool {
	head := bytes.ToLower(data[:min(len(data), 1024)])
	return bytes.Contains(head, []byte("charset"))
}

// flattenDepths are the depths, in tags as written, a page nested deeper
// than the HTML parser allows (512 open elements) is cut to, tried in
// turn. A written tag can open up to three elements (a <td> straight in a
// <table> opens tbody, tr and td), so 160 keeps within the parser's limit;
// the smaller one is for what that still misses.
var flattenDepths = []int{160, 40}

// parse builds the page's tree. A page nested deeper than the parser
// allows is parsed again with the elements past a depth dropped (their
// text kept), so a hostile page cannot hide its text behind depth nor
// make the extractor recurse without end.
func parse(page []byte) (*html.Node, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	for _, depth := range flattenDepths {
		if err == nil || !strings.Contains(err.Error(), "open stack of elements") {
			break
		}
		doc, err = html.Parse(bytes.NewReader(flatten(page, depth)))
	}
	if err != nil {
		return nil, fmt.Errorf("parsing the page: %w", err)
	}
	return doc, nil
}

// flatten re-serialises the page with the start and end tags of elements
// nested deeper than limit left out. Depth is counted from the tags as
// written (an element stays open until its own end tag), which is at
// least the parser's count, so the parser's limit is not reached again.
func flatten(page []byte, limit int) []byte {
	var out bytes.Buffer
	out.Grow(len(page))
	z := html.NewTokenizer(bytes.NewReader(page))
	var open []string           // the elements kept open, outermost first
	dropped := map[string]int{} // elements left out and not yet closed, by name
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out.Bytes()
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken:
			if void[tok.Data] {
				break
			}
			if len(open) >= limit {
				dropped[tok.Data]++
				continue
			}
			open = append(open, tok.Data)
		case html.EndTagToken:
			if dropped[tok.Data] > 0 {
				dropped[tok.Data]--
				continue
			}
			for i := len(open) - 1; i >= 0; i-- {
				if open[i] == tok.Data {
					open = open[:i]
					break
				}
			}
		}
		out.WriteString(tok.String())
	}
}

// void are the elements that have no end tag.
var void = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true, "input": true,
	"link": true, "meta": true, "source": true, "track": true, "wbr": true,
}
