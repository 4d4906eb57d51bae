package doctext

import (
	"encoding/xml"
	"fmt"
	"net/url"
)

const maxSpine = 5_000 // chapters of a book

// epub reads the book's chapters in reading (spine) order.
func (d *doc) epub(p *parts) error {
	opf, err := d.epubPackage()
	if err != nil {
		return err
	}
	w, c, err := d.z.xml(opf)
	if err != nil {
		return fmt.Errorf("%w: the book's package %s: %v", ErrCorrupt, opf, err)
	}
	manifest := map[string]string{}
	var spine []string
	err = w.each(func(t xml.Token) error {
		e, ok := t.(xml.StartElement)
		if !ok {
			return nil
		}
		switch e.Name.Local {
		case "item":
			href := attr(e, "href")
			if u, err := url.PathUnescape(href); err == nil {
				href = u
			}
			if len(manifest) < 4*maxSpine {
				manifest[attr(e, "id")] = resolve(opf, href)
			}
		case "itemref":
			if attr(e, "linear") != "no" && len(spine) < maxSpine {
				spine = append(spine, attr(e, "idref"))
			}
		}
		return nil
	})
	c.Close()
	if err != nil {
		return err
	}
	for _, id := range spine {
		part := manifest[id]
		rc, err := d.z.open(part)
		if err != nil {
			continue // a chapter the manifest names but the book lacks
		}
		err = htmlText(d.ctx, rc, p, false)
		rc.Close()
		if err != nil {
			return err
		}
		if err := p.para(); err != nil {
			return err
		}
	}
	return nil
}

// epubPackage finds the package document (the OPF) from the container.
func (d *doc) epubPackage() (string, error) {
	w, c, err := d.z.xml("META-INF/container.xml")
	if err != nil {
		return "", fmt.Errorf("%w: an EPUB without META-INF/container.xml", ErrCorrupt)
	}
	defer c.Close()
	opf, found := "", false
	err = w.each(func(t xml.Token) error {
		if e, ok := t.(xml.StartElement); ok && e.Name.Local == "rootfile" {
			opf, found = resolve("", attr(e, "full-path")), true
			return errStop
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%w: the EPUB names no package document", ErrCorrupt)
	}
	return opf, nil
}
