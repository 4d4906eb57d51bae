package doctext

import (
	"encoding/xml"
	"path"
	"sort"
	"strconv"
	"strings"
)

const maxSlides = 10_000

// pptx reads the slides asked for, in presentation order.
func (d *doc) pptx() (Result, error) {
	slides, err := d.slideParts()
	if err != nil {
		return Result{}, err
	}
	if len(slides) == 0 {
		// A deck saved before its first slide was made is a deck, not
		// a damaged file.
		return Result{Format: d.format, Unit: "slide", Shown: "",
			Text: wrap(d.name, d.mime, []string{"slides", "0"}, "", []string{"The presentation has no slides."})}, nil
	}
	res, _, err := d.paged(len(slides), "slide", func(i, budget int) (unitText, error) {
		p := newParts(budget, 1)
		if err := d.slideText(p, slides[i-1]); err != nil && err != errEnough {
			return unitText{}, err
		}
		cut := p.more
		p.finish()
		return unitText{text: strings.TrimSpace(p.kept), cut: cut, empty: "(no text on this slide)"}, nil
	})
	return res, err
}

// slideParts lists the slides in the order of presentation.xml, or by
// their numbers when it lists none.
func (d *doc) slideParts() ([]string, error) {
	rels, err := d.z.rels("ppt/presentation.xml")
	if err != nil {
		return nil, err
	}
	var out []string
	err = d.z.walk("ppt/presentation.xml", func(t xml.Token) error {
		if e, ok := t.(xml.StartElement); ok && e.Name.Local == "sldId" && len(out) < maxSlides {
			if part := rels[attrNS(e, "r", "id")]; part != "" && d.z.files[part] != nil {
				out = append(out, part)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) > 0 {
		return out, nil
	}
	num := func(s string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path.Base(s), "slide"), ".xml"))
		return n
	}
	for name := range d.z.files {
		if path.Dir(name) == "ppt/slides" && strings.HasPrefix(path.Base(name), "slide") && strings.HasSuffix(name, ".xml") &&
			len(out) < maxSlides {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return num(out[i]) < num(out[j]) })
	return out, nil
}

// slideText reads one slide: its paragraphs (numbered and bulleted as
// the slide says), tables as rows, and the text of objects embedded in it.
func (d *doc) slideText(p *parts, part string) error {
	var tb table
	var lists slideLists
	emb := d.embeds(part)
	// The paragraph's bullet, from its a:pPr; counted at its first text.
	lvl, kind, typ, start := 0, "", "", 1
	tb.lead = func() string { return lists.label(lvl, kind, typ, start) }
	return d.walkText(part, p, &tb, func(t xml.Token) (err error) {
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "t":
				tb.inText = true
			case "br":
				err = tb.write(p, "\n")
			case "txBody":
				lists = slideLists{}
			case "p":
				lvl, kind, typ, start = 0, "", "", 1
				tb.led = false
			case "pPr":
				if e.Name.Space == "a" {
					lvl, _ = strconv.Atoi(attr(e, "lvl"))
				}
			case "buAutoNum":
				kind, typ = "auto", attr(e, "type")
				if n, err := strconv.Atoi(attr(e, "startAt")); err == nil && n >= 1 && n < 1<<16 {
					start = n
				}
			case "buChar", "buBlip":
				kind = "char"
			case "buNone":
				kind = ""
			case "oleObj":
				if tb.depth == 0 {
					err = emb.read(p, attrNS(e, "r", "id"))
				}
			}
		case xml.EndElement:
			if e.Name.Local == "p" {
				err = tb.endPara(p)
			}
		}
		return err
	})
}
