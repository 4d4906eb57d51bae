package doctext

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Limits for the zip-based formats: an office file from a stranger may be
// a zip bomb, or XML built to exhaust the reader.
const (
	maxZipEntries = 20_000
	maxCentralDir = 16 << 20 // bytes of zip directory
	maxEntryBytes = 48 << 20 // one entry, uncompressed
	maxDocBytes   = 64 << 20 // all entries read for one document, uncompressed
	maxXMLDepth   = 512
)

// zipDoc is an opened zip with the bytes read from it counted.
type zipDoc struct {
	z     *zip.Reader
	files map[string]*zip.File
	read  int64
	// ctx ends every walk of its entries (see xmlWalk.next).
	ctx context.Context
	// cut is set when a run of text longer than maxTextRun was cut short.
	cut bool
	// depth counts the documents this one is embedded in (see embeds).
	depth int
}

// openZip checks the directory's claims before archive/zip reads them:
// it would hold every entry of the directory in memory.
func openZip(f io.ReaderAt, size int64) (*zipDoc, error) {
	tail := min(size, 65557)
	buf := make([]byte, tail)
	if _, err := f.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read zip: %w", err)
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < 22 {
		return nil, fmt.Errorf("%w: a zip without its directory (cut off?)", ErrCorrupt)
	}
	entries := uint64(binary.LittleEndian.Uint16(buf[i+10:]))
	dirSize := uint64(binary.LittleEndian.Uint32(buf[i+12:]))
	if (entries == 0xFFFF || dirSize == 0xFFFFFFFF) && i >= 20 && string(buf[i-20:i-16]) == "PK\x06\x07" {
		off := int64(binary.LittleEndian.Uint64(buf[i-12:]))
		rec := make([]byte, 56)
		if off >= 0 && off < size {
			if n, _ := f.ReadAt(rec, off); n == 56 && string(rec[:4]) == "PK\x06\x06" {
				entries = binary.LittleEndian.Uint64(rec[32:])
				dirSize = binary.LittleEndian.Uint64(rec[40:])
			}
		}
	}
	if entries > maxZipEntries || dirSize > maxCentralDir {
		return nil, fmt.Errorf("%w: the zip has %d entries (%d bytes of directory); at most %d are read",
			ErrTooLarge, entries, dirSize, maxZipEntries)
	}
	z, err := zip.NewReader(f, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	d := &zipDoc{z: z, files: make(map[string]*zip.File, len(z.File))}
	for _, zf := range z.File {
		// Names are only looked up, never written anywhere: the clean
		// form is enough to find "word/document.xml" however it is spelt.
		n := strings.TrimPrefix(path.Clean("/"+strings.ReplaceAll(zf.Name, `\`, "/")), "/")
		if _, dup := d.files[n]; !dup {
			d.files[n] = zf
		}
	}
	return d, nil
}

// kind names the format from the entries the formats require.
func (z *zipDoc) kind() (string, error) {
	if f := z.files["mimetype"]; f != nil {
		b, err := z.readSmall("mimetype", 256)
		if err == nil {
			switch strings.TrimSpace(string(b)) {
			case "application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.text-template",
				// Writer/Web's and master documents' text is an ODT's
				"application/vnd.oasis.opendocument.text-web", "application/vnd.oasis.opendocument.text-master":
				return "odt", z.odfEncrypted()
			case "application/vnd.oasis.opendocument.spreadsheet", "application/vnd.oasis.opendocument.spreadsheet-template":
				return "ods", z.odfEncrypted()
			case "application/vnd.oasis.opendocument.presentation", "application/vnd.oasis.opendocument.presentation-template":
				return "odp", z.odfEncrypted()
			case "application/epub+zip":
				return "epub", nil
			}
			return "", fmt.Errorf("%w: a %q package", ErrUnsupported, strings.TrimSpace(string(b)))
		}
	}
	switch {
	case z.files["word/document.xml"] != nil:
		return "docx", nil
	case z.files["xl/workbook.xml"] != nil:
		return "xlsx", nil
	case z.files["ppt/presentation.xml"] != nil:
		return "pptx", nil
	case z.files["META-INF/container.xml"] != nil:
		return "epub", nil
	}
	return "", fmt.Errorf("%w: a zip archive that is no document this reader knows", ErrUnsupported)
}

// odfEncrypted: an ODF package with a password lists encryption data for
// its parts in the manifest.
func (z *zipDoc) odfEncrypted() error {
	b, err := z.readSmall("META-INF/manifest.xml", 1<<20)
	if err == nil && bytes.Contains(b, []byte("encryption-data")) {
		return fmt.Errorf("%w: it is protected with a password", ErrEncrypted)
	}
	return nil
}

var errNoEntry = errors.New("no such entry")

// open opens an entry, refusing it when it would take the document past
// its limits.
func (z *zipDoc) open(name string) (io.ReadCloser, error) {
	f := z.files[name]
	if f == nil {
		return nil, fmt.Errorf("%w: %s", errNoEntry, name)
	}
	if f.Flags&1 != 0 {
		return nil, fmt.Errorf("%w: its parts are protected with a password", ErrEncrypted)
	}
	if f.UncompressedSize64 > maxEntryBytes || int64(f.UncompressedSize64)+z.read > maxDocBytes {
		return nil, fmt.Errorf("%w: %s would expand to %d MiB (at most %d MiB are read per part, %d MiB per document)",
			ErrTooLarge, name, f.UncompressedSize64>>20, maxEntryBytes>>20, maxDocBytes>>20)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	// archive/zip stops at the declared size; this counts what is read.
	return &countedEntry{rc: rc, z: z, name: name}, nil
}

type countedEntry struct {
	rc   io.ReadCloser
	z    *zipDoc
	name string
}

func (c *countedEntry) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.z.read += int64(n)
	if c.z.read > maxDocBytes {
		return n, fmt.Errorf("%w: more than %d MiB", ErrTooLarge, maxDocBytes>>20)
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %s: %v", ErrCorrupt, c.name, err)
	}
	return n, err
}

func (c *countedEntry) Close() error { return c.rc.Close() }

func (z *zipDoc) readSmall(name string, limit int64) ([]byte, error) {
	rc, err := z.open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// One allocation of the size the entry declares (archive/zip fails
	// an entry that runs past it), not ReadAll's doublings: a 16 MiB
	// embedded file would cost twice that.
	n := min(int64(z.files[name].UncompressedSize64), limit)
	b := make([]byte, n+1)
	k, err := io.ReadFull(rc, b)
	switch {
	case int64(k) > limit:
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, name, limit)
	case err == nil:
		// The entry is longer than it said: read on to the limit, and
		// let archive/zip's check answer.
		rest, err := io.ReadAll(io.LimitReader(rc, limit+1-int64(k)))
		if err != nil {
			return nil, err
		}
		if b = append(b, rest...); int64(len(b)) > limit {
			return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, name, limit)
		}
		return b, nil
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return b[:k], nil
	}
	return nil, err
}

// resolve turns a target relative to the part base (as relationships and
// manifests write them) into an entry name.
func resolve(base, target string) string {
	if strings.HasPrefix(target, "/") {
		return strings.TrimPrefix(path.Clean(target), "/")
	}
	return strings.TrimPrefix(path.Clean("/"+path.Join(path.Dir(base), target)), "/")
}

// xmlWalk streams the tokens of an XML entry to fn, bounding the nesting.
// The tokens are RawToken's: valid until the next one, names unresolved
// (matched on their local part).
type xmlWalk struct {
	ctx    context.Context
	d      *xml.Decoder
	depth  int
	name   string
	tokens int
}

func (z *zipDoc) xml(name string) (*xmlWalk, io.Closer, error) {
	rc, err := z.open(name)
	if err != nil {
		return nil, nil, err
	}
	d := xml.NewDecoder(&xmlBound{r: rc, z: z, name: name})
	d.Strict = false // entities an office program wrote and forgot to declare
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		return nil, fmt.Errorf("%w: %s is in %s, not UTF-8", ErrUnsupported, name, label)
	}
	ctx := z.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return &xmlWalk{ctx: ctx, d: d, name: name}, rc, nil
}

// errStop, returned by a walk's function, ends the walk without an error.
var errStop = errors.New("stop walking")

// walk calls f with each token of the XML entry name, up to its end, an
// error, or f's errStop. That the entry cannot be opened is z.xml's
// error as it is, so errNoEntry still reads as "absent".
func (z *zipDoc) walk(name string, f func(xml.Token) error) error {
	w, c, err := z.xml(name)
	if err != nil {
		return err
	}
	defer c.Close()
	return w.each(f)
}

// each calls f with each remaining token; see walk.
func (w *xmlWalk) each(f func(xml.Token) error) error {
	for {
		t, err := w.next()
		if err == io.EOF {
			return nil
		}
		if err == nil {
			err = f(t)
		}
		if err == errStop {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// next returns the next token, or io.EOF at the end; every few thousand
// tokens it stops if the extraction's context has ended.
func (w *xmlWalk) next() (xml.Token, error) {
	if w.tokens++; w.tokens%4096 == 0 {
		if err := w.ctx.Err(); err != nil {
			return nil, err
		}
	}
	t, err := w.d.RawToken()
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported) {
			return nil, err // the entry's own reader already said what is wrong
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, w.name, err)
	}
	switch t.(type) {
	case xml.StartElement:
		if w.depth++; w.depth > maxXMLDepth {
			return nil, fmt.Errorf("%w: %s nests more than %d levels deep", ErrCorrupt, w.name, maxXMLDepth)
		}
	case xml.EndElement:
		w.depth--
	}
	return t, nil
}

func attr(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// attrNS is attr for a prefixed attribute (r:id and id differ).
func attrNS(e xml.StartElement, space, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local && a.Name.Space == space {
			return a.Value
		}
	}
	return ""
}

// rels reads a relationships part: Id → entry name.
func (z *zipDoc) rels(part string) (map[string]string, error) {
	relsName := path.Join(path.Dir(part), "_rels", path.Base(part)+".rels")
	m := map[string]string{}
	err := z.walk(relsName, func(t xml.Token) error {
		if e, ok := t.(xml.StartElement); ok && e.Name.Local == "Relationship" && attr(e, "TargetMode") != "External" {
			m[attr(e, "Id")] = resolve(part, attr(e, "Target"))
		}
		return nil
	})
	if errors.Is(err, errNoEntry) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}
