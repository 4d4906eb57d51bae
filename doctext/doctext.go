// Package doctext turns a document into text a model can read: PDF (page
// by page), DOCX, XLSX, ODS, ODT, PPTX, ODP, EPUB, HTML, CSV and plain text.
//
// Documents come from chat members, so they are hostile input: every
// read is bounded (bytes a zip may expand to, entries, XML nesting and
// token sizes, the bytes all of a PDF's streams may decode to, its
// objects and filter chains), the context is honoured while a file is
// opened and walked, a malformed file is an error and never a panic,
// and the text is XML-escaped inside a <document> wrapper it cannot
// leave. A long document is read a bounded amount at a time: pages of a
// PDF, slides of a presentation, or parts of a long text, chosen with
// Options.Pages.
package doctext

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// DefaultMaxChars is the text budget of one call when Options.MaxChars is
// not set: about 15k tokens, enough for a dozen dense pages.
const DefaultMaxChars = 60_000

// Errors, wrapped with the details.
var (
	ErrUnsupported = errors.New("unsupported document format")
	ErrEncrypted   = errors.New("the document is encrypted")
	ErrCorrupt     = errors.New("the document is damaged or not what its name says")
	ErrTooLarge    = errors.New("the document expands to more than can be read safely")
	ErrPages       = errors.New("bad pages argument")
)

// Options choose what part of a document to read.
type Options struct {
	// Pages selects pages (PDF), slides (PPTX, ODP) or parts (anything else,
	// when it is longer than MaxChars): "7", "3-5", "3-" or "" for the
	// start. Pages are numbered from 1.
	Pages string
	// MaxChars bounds the text of one call, in characters (runes);
	// DefaultMaxChars when 0.
	MaxChars int
}

// Result is the text of a document, or of the part of it asked for.
type Result struct {
	// Text is the document wrapped and escaped, followed by notes from
	// botd (what is shown, how to ask for more, why a page is empty):
	//   <document name="r.pdf" mime="application/pdf" pages="1-12 of 300">…</document>
	Text   string
	Format string // "pdf", "docx", "xlsx", "ods", "odt", "pptx", "odp", "epub", "html", "csv", "text"
	Unit   string // what Pages counts: "page", "slide" or "part"
	Pages  int    // how many there are; 0 when not known (reading stopped early)
	Shown  string // which are in Text: "3-5"
	More   string // what to ask for next, e.g. `pages: "13-24"`; "" when nothing is left
	NoText bool   // a PDF whose pages shown have no text layer (a scan)
}

// Extract reads the document in f (size bytes; name and mime as the host
// has them, both untrusted) and returns its text. The format is decided
// by the content where it can be (a .docx the host calls application/zip
// is still a DOCX); name and mime decide between the text formats.
func Extract(ctx context.Context, f io.ReaderAt, size int64, name, mime string, o Options) (res Result, err error) {
	defer func() {
		// A bug meeting a hostile file must not take the process down.
		if p := recover(); p != nil {
			res, err = Result{}, fmt.Errorf("%w: reading it failed (%v)", ErrCorrupt, p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMaxChars
	}
	req, err := parsePages(o.Pages)
	if err != nil {
		return Result{}, err
	}
	format, z, err := detect(f, size, name, mime)
	if err != nil {
		return Result{}, err
	}
	if z != nil {
		z.ctx = ctx
	}
	d := doc{ctx: ctx, f: f, size: size, z: z, name: name, mime: mime, format: format, req: req, max: o.MaxChars}
	switch format {
	case "pdf":
		return d.pdf()
	case "pptx":
		return d.pptx()
	case "odp":
		return d.odp()
	}
	var read func(*parts) error
	switch format {
	case "docx":
		read = d.docx
	case "xlsx":
		read = d.xlsx
	case "ods", "odt":
		read = d.odf
	case "epub":
		read = d.epub
	case "html":
		read = func(p *parts) error { return htmlText(ctx, io.NewSectionReader(f, 0, size), p, true) }
	case "csv":
		read = func(p *parts) error { return csvText(ctx, io.NewSectionReader(f, 0, size), name, mime, p) }
	default:
		read = func(p *parts) error { return plainText(ctx, io.NewSectionReader(f, 0, size), p) }
	}
	return d.streamed(read)
}

// doc is one Extract call.
type doc struct {
	ctx                context.Context
	f                  io.ReaderAt
	size               int64
	z                  *zipDoc
	name, mime, format string
	req                span
	max                int
}

// Formats by what the host may call them.
var (
	mimeFormats = map[string]string{
		"application/pdf": "pdf",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document":   "docx",
		"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":         "xlsx",
		"application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
		"application/vnd.oasis.opendocument.text":                                   "odt",
		"application/vnd.oasis.opendocument.spreadsheet":                            "ods",
		"application/vnd.oasis.opendocument.presentation":                           "odp",
		"application/epub+zip":      "epub",
		"text/html":                 "html",
		"application/xhtml+xml":     "html",
		"text/csv":                  "csv",
		"text/tab-separated-values": "csv",
		"application/json":          "text",
		"application/xml":           "text",
		"application/x-yaml":        "text",
		"application/yaml":          "text",
	}
	extFormats = map[string]string{
		".pdf": "pdf", ".docx": "docx", ".xlsx": "xlsx", ".pptx": "pptx", ".odt": "odt", ".ods": "ods", ".odp": "odp",
		".epub": "epub", ".html": "html", ".htm": "html", ".xhtml": "html", ".csv": "csv", ".tsv": "csv",
		".txt": "text", ".md": "text", ".markdown": "text", ".json": "text", ".xml": "text", ".yaml": "text",
		".yml": "text", ".log": "text", ".rst": "text", ".tex": "text", ".ini": "text", ".toml": "text",
		".srt": "text", ".vtt": "text",
	}
)

// Supported tells, from name and mime alone, whether Extract can read
// the document.
func Supported(name, mime string) bool {
	return Format(name, mime) != ""
}

// Format names the format Extract reads a file of this name and type as,
// before it looks at the bytes ("pdf", "docx", "html", "csv", "text"…;
// see Result.Format), or "" when it cannot read it.
func Format(name, mime string) string {
	mime = strings.ToLower(strings.TrimSpace(strings.Split(mime, ";")[0]))
	ext := strings.ToLower(path.Ext(name))
	if strings.HasSuffix(ext, ".txt") && strings.HasSuffix(strings.ToLower(name), ".html.txt") {
		ext = ".html" // how botd's cache names HTML
	}
	if f, ok := mimeFormats[mime]; ok {
		// A zip or a text the host could not tell more about: the name may.
		if f == "text" {
			if g := extFormats[ext]; g == "csv" || g == "html" {
				return g
			}
		}
		return f
	}
	switch {
	case strings.HasPrefix(mime, "text/"), strings.HasSuffix(mime, "+json"), strings.HasSuffix(mime, "+xml"):
		if g := extFormats[ext]; g == "csv" || g == "html" {
			return g
		}
		return "text"
	case mime == "application/zip", mime == "application/octet-stream", mime == "":
		return extFormats[ext]
	}
	return ""
}
