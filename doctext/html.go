package doctext

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxHTMLToken bounds one token (a tag, or a run of text) of HTML.
const maxHTMLToken = 4 << 20

// htmlText writes the text of an HTML (or XHTML) page: block elements
// break lines, headings get #, list items -, table rows become | a | b |,
// and scripts, styles and the like say nothing. The page's <title> is a
// heading when title is set (a book's chapters repeat the book's).
func htmlText(ctx context.Context, r io.Reader, p *parts, title bool) error {
	z := html.NewTokenizer(r)
	z.SetMaxBuf(maxHTMLToken)
	var tb table
	skip := 0 // inside script, style, …
	pre := 0
	inHead, inTitle := false, false
	ops := 0
	write := func(s string) error {
		if skip > 0 || (inHead && !(inTitle && title)) {
			return nil
		}
		return tb.write(p, s)
	}
	for {
		tt := z.Next()
		if ops++; ops%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var err error
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				if errors.Is(err, html.ErrBufferExceeded) {
					return fmt.Errorf("%w: a run of HTML longer than %d MiB", ErrTooLarge, maxHTMLToken>>20)
				}
				return fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			return nil
		case html.TextToken:
			t := string(z.Text())
			if pre == 0 {
				t = strings.Join(strings.Fields(t), " ")
				if t == "" {
					break
				}
				if raw := z.Raw(); len(raw) > 0 && isHTMLSpace(raw[0]) {
					t = " " + t
				}
				if raw := z.Raw(); len(raw) > 0 && isHTMLSpace(raw[len(raw)-1]) {
					t += " "
				}
			}
			err = write(t)
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			end := tt == html.EndTagToken
			switch a {
			case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Math, atom.Iframe, atom.Object:
				if tt == html.SelfClosingTagToken {
					break
				}
				if end {
					skip = max(0, skip-1)
				} else {
					skip++
				}
			case atom.Head:
				inHead = !end
			case atom.Title:
				inTitle = !end && tt != html.SelfClosingTagToken
				if inTitle {
					err = write("# ")
				} else if title {
					err = p.line()
				}
			case atom.Pre:
				if end {
					pre = max(0, pre-1)
				} else {
					pre++
				}
				err = p.line()
			case atom.Br:
				err = write("\n")
			case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
				if err = p.line(); err == nil && !end && tb.depth == 0 && skip == 0 {
					err = write(strings.Repeat("#", int(name[1]-'0')) + " ")
				}
			case atom.Li:
				if err = p.line(); err == nil && !end && tb.depth == 0 {
					err = write("- ")
				}
			case atom.Table:
				if end {
					tb.depth = max(0, tb.depth-1)
				} else {
					tb.depth++
				}
				err = p.line()
			case atom.Td, atom.Th:
				if !end {
					tb.startCell()
				} else if tb.inCell {
					tb.endCell()
				}
			case atom.Tr:
				if end {
					if tb.inCell {
						tb.endCell()
					}
					err = tb.endRow(p)
				}
			case atom.P, atom.Div, atom.Section, atom.Article, atom.Header, atom.Footer, atom.Blockquote,
				atom.Ul, atom.Ol, atom.Dl, atom.Dt, atom.Dd, atom.Hr, atom.Form, atom.Fieldset, atom.Figure,
				atom.Figcaption, atom.Nav, atom.Aside, atom.Main, atom.Address, atom.Caption, atom.Body:
				if tb.depth > 0 && tb.inCell {
					err = write(" ")
				} else {
					err = p.line()
				}
			}
		}
		if err != nil {
			return err
		}
	}
}

func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f'
}
