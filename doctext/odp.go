package doctext

import (
	"encoding/xml"
	"io"
	"strings"
)

// odp reads the slides of an OpenDocument presentation asked for, in
// order (draw:page in content.xml): their text boxes, lists, tables and
// speaker notes, as a PPTX's are read.
func (d *doc) odp() (Result, error) {
	total := 0
	err := d.z.walk("content.xml", func(t xml.Token) error {
		if e, ok := t.(xml.StartElement); ok && e.Name.Local == "page" {
			if total++; total >= maxSlides {
				return errStop
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	if total == 0 {
		return Result{Format: d.format, Unit: "slide", Shown: "",
			Text: wrap(d.name, d.mime, []string{"slides", "0"}, "", []string{"The presentation has no slides."})}, nil
	}
	lists := newODFLists()
	if err := d.odfStyles(lists); err != nil {
		return Result{}, err
	}
	// One walk serves every slide asked for: paged asks for them in order.
	w, c, err := d.z.xml("content.xml")
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	page := 0 // the pages passed so far
	res, _, err := d.paged(total, "slide", func(i, budget int) (unitText, error) {
		p := newParts(budget, 1)
		r := odfText{d: d, p: p, lists: lists}
		lists.open, lists.itemPending = nil, false
		depth := 0 // inside the page being read
		var wrote error
		for {
			t, err := w.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return unitText{}, err
			}
			if depth == 0 {
				e, ok := t.(xml.StartElement)
				switch {
				case ok && e.Name.Local == "page":
					if page++; page >= i {
						depth, r.inBody = 1, true
					} else if err := skipElement(w); err != nil {
						return unitText{}, err
					}
				case page == 0:
					lists.styleToken(t) // the automatic styles before the slides
				}
				continue
			}
			switch e := t.(type) {
			case xml.StartElement:
				depth++
				if e.Name.Local == "notes" && wrote == nil {
					wrote = p.line()
					r.lead = "Speaker notes:\n"
				}
			case xml.EndElement:
				depth--
			}
			if depth == 0 {
				break
			}
			// Past the budget the page is only walked to its end.
			if wrote == nil {
				wrote = r.token(t)
			}
		}
		if wrote != nil && wrote != errEnough {
			return unitText{}, wrote
		}
		cut := p.more
		p.finish()
		return unitText{text: strings.TrimSpace(p.kept), cut: cut, empty: "(no text on this slide)"}, nil
	})
	return res, err
}

// skipElement walks past the end of the element just started.
func skipElement(w *xmlWalk) error {
	for depth := 1; depth > 0; {
		t, err := w.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	return nil
}
