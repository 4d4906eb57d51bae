package doctext

import (
	"bytes"
	"fmt"
	"io"
)

// detect decides the format: by the bytes for PDF and the zip-based
// formats (whose MIME type the host often only knows as application/zip),
// by name and type for the text formats.
func detect(f io.ReaderAt, size int64, name, mime string) (string, *zipDoc, error) {
	head := make([]byte, 1024)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return "", nil, fmt.Errorf("read %s: %w", name, err)
	}
	head = head[:n]
	claimed := Format(name, mime)
	switch {
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return "pdf", nil, nil
	case bytes.Contains(head, []byte("%PDF-")) && (claimed == "pdf" || claimed == ""):
		return "pdf", nil, nil // junk before the header, which readers allow
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		z, err := openZip(f, size)
		if err != nil {
			return "", nil, err
		}
		format, err := z.kind()
		return format, z, err
	case bytes.HasPrefix(head, []byte("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1")):
		// An OLE2 compound file: the old binary Office formats, and also
		// what Office wraps a password-protected DOCX/XLSX/PPTX in.
		if oleEncrypted(f, size) {
			return "", nil, fmt.Errorf("%w: it is protected with a password", ErrEncrypted)
		}
		return "", nil, fmt.Errorf("%w: the old binary Office formats (.doc, .xls, .ppt) cannot be read; "+
			"saved as .docx, .xlsx, .pptx or PDF it can", ErrUnsupported)
	}
	switch claimed {
	case "", "pdf", "docx", "xlsx", "pptx", "odt", "ods", "odp", "epub":
		if claimed != "" {
			return "", nil, fmt.Errorf("%w: called %s but its content is not one", ErrCorrupt, claimed)
		}
		return "", nil, fmt.Errorf("%w: %q", ErrUnsupported, mime)
	}
	// Text of some kind: binary content is not.
	if bytes.IndexByte(head, 0) >= 0 && !utf16BOM(head) {
		return "", nil, fmt.Errorf("%w: binary content, not text", ErrUnsupported)
	}
	return claimed, nil, nil
}

func utf16BOM(b []byte) bool {
	return bytes.HasPrefix(b, []byte{0xFF, 0xFE}) || bytes.HasPrefix(b, []byte{0xFE, 0xFF})
}

// oleEncrypted looks for the stream name Office gives an encrypted
// package, in UTF-16 as the compound file's directory has it.
func oleEncrypted(f io.ReaderAt, size int64) bool {
	const name = "E\x00n\x00c\x00r\x00y\x00p\x00t\x00e\x00d\x00P\x00a\x00c\x00k\x00a\x00g\x00e\x00"
	buf := make([]byte, min(size, 1<<20))
	n, _ := f.ReadAt(buf, 0)
	return bytes.Contains(buf[:n], []byte(name))
}
