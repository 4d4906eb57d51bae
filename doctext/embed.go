package doctext

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Embedded objects: a spreadsheet pasted into a slide or a report is a
// whole XLSX (or DOCX, PPTX, ODS, ODT) inside the zip, with a picture of
// it for show. Its text is read through the same readers, into the same
// text budget; the bytes it expands to count against the document's own
// limit (maxDocBytes), and an object inside an object inside an object
// is as deep as it goes.
const (
	maxEmbedDepth = 2        // objects within objects read
	maxEmbedBytes = 16 << 20 // one embedded file, as stored in the document
)

// embeds reads the objects embedded in one part, each once.
type embeds struct {
	d    *doc
	part string
	rels map[string]string
	seen map[string]bool
}

func (d *doc) embeds(part string) *embeds {
	return &embeds{d: d, part: part}
}

// read writes the text of the object the part's relationship rid points
// at, between lines that say what it is. An object that is not an office
// document (an old binary OLE object, a picture) is passed over; one
// that cannot be read is said to be so, and the reading goes on.
func (e *embeds) read(p *parts, rid string) error {
	z := e.d.z
	if rid == "" || z.depth >= maxEmbedDepth {
		return nil
	}
	if e.rels == nil {
		rels, err := z.rels(e.part)
		if err != nil {
			return err
		}
		e.rels, e.seen = rels, map[string]bool{}
	}
	target := e.rels[rid]
	if target == "" || e.seen[target] || z.files[target] == nil {
		return nil
	}
	e.seen[target] = true
	b, err := z.readSmall(target, maxEmbedBytes)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return e.note(p, fmt.Sprintf("An embedded object (%s) is too large to read.", path.Base(target)))
		}
		return err
	}
	if !bytes.HasPrefix(b, []byte("PK\x03\x04")) {
		return nil
	}
	inner, err := openZip(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil
	}
	// The embedded file's reading is charged to the document's budget.
	inner.ctx, inner.read, inner.depth = z.ctx, z.read, z.depth+1
	defer func() {
		z.read = inner.read
		z.cut = z.cut || inner.cut
	}()
	format, err := inner.kind()
	if err != nil {
		return nil
	}
	what := map[string]string{"xlsx": "spreadsheet", "ods": "spreadsheet", "docx": "document", "odt": "document",
		"pptx": "presentation"}[format]
	if what == "" {
		return nil
	}
	d := &doc{ctx: e.d.ctx, f: bytes.NewReader(b), size: int64(len(b)), z: inner, name: e.d.name, mime: e.d.mime,
		format: format, req: e.d.req, max: e.d.max}
	if err := p.para(); err != nil {
		return err
	}
	if err := p.text("[Embedded " + what + "]\n"); err != nil {
		return err
	}
	switch format {
	case "xlsx":
		err = d.xlsx(p)
	case "docx":
		err = d.docx(p)
	case "ods", "odt":
		err = d.odf(p)
	case "pptx":
		err = d.embeddedSlides(p)
	}
	switch {
	case err == nil:
	case errors.Is(err, errEnough), e.d.ctx.Err() != nil:
		return err
	default:
		if err := e.note(p, "The rest of the embedded "+what+" could not be read: "+strings.TrimSuffix(err.Error(), ".")+"."); err != nil {
			return err
		}
	}
	if err := p.line(); err != nil {
		return err
	}
	if err := p.text("[End of the embedded " + what + "]"); err != nil {
		return err
	}
	return p.para()
}

func (e *embeds) note(p *parts, s string) error {
	if err := p.line(); err != nil {
		return err
	}
	if err := p.text("[" + s + "]"); err != nil {
		return err
	}
	return p.line()
}

// embeddedSlides reads the slides of an embedded presentation one after
// the other.
func (d *doc) embeddedSlides(p *parts) error {
	slides, err := d.slideParts()
	if err != nil {
		return err
	}
	for i, s := range slides {
		if err := p.text(fmt.Sprintf("Slide %d:\n", i+1)); err != nil {
			return err
		}
		if err := d.slideText(p, s); err != nil {
			return err
		}
		if err := p.line(); err != nil {
			return err
		}
	}
	return nil
}
