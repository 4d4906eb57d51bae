package mediaregistry

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// SniffLen is how many leading bytes Sniff looks at.
const SniffLen = 512

// Sniff names the type of content from its first bytes, or
// "application/octet-stream" when it cannot tell.
func Sniff(head []byte) string {
	switch {
	case len(head) >= 12 && string(head[4:8]) == "ftyp":
		brand := string(head[8:12])
		switch {
		case strings.HasPrefix(brand, "heic"), strings.HasPrefix(brand, "heix"), strings.HasPrefix(brand, "mif1"):
			return "image/heic"
		case strings.HasPrefix(brand, "M4A"):
			return "audio/mp4"
		case strings.HasPrefix(brand, "qt"):
			return "video/quicktime"
		}
		return "video/mp4"
	case bytes.HasPrefix(head, []byte("OggS")):
		if bytes.Contains(head, []byte("OpusHead")) || bytes.Contains(head, []byte("vorbis")) {
			return "audio/ogg"
		}
		return "application/ogg"
	case bytes.HasPrefix(head, []byte{0x1A, 0x45, 0xDF, 0xA3}):
		return "video/webm"
	case bytes.HasPrefix(head, []byte("ID3")) || (len(head) > 1 && head[0] == 0xFF && head[1]&0xE0 == 0xE0 && head[1]&0x06 != 0):
		return "audio/mpeg"
	case len(head) > 1 && head[0] == 0xFF && head[1]&0xF6 == 0xF0:
		// An ADTS frame: the MPEG sync word with layer 0, which MP3 never has.
		return "audio/aac"
	case bytes.HasPrefix(head, []byte("fLaC")):
		return "audio/flac"
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return sniffZip(head)
	}
	m, _, _ := strings.Cut(http.DetectContentType(head), ";")
	return m
}

// zipTypes are the formats that are zip files underneath, by the type
// they are known as and their extension.
var zipTypes = map[string]string{
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document":   ".docx",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":         ".xlsx",
	"application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
	"application/vnd.oasis.opendocument.text":                                   ".odt",
	"application/vnd.oasis.opendocument.spreadsheet":                            ".ods",
	"application/vnd.oasis.opendocument.presentation":                           ".odp",
	"application/epub+zip": ".epub",
}

// typeExts are the extensions of the types botd names files by: the
// first is the one it gives (Ext), the others are kept on a file that
// already has them (ExtFits) — a voice note named x.opus stays x.opus.
// Every one maps back to its type (TypeByExtension) on every machine,
// whatever its /etc/mime.types says.
var typeExts = []struct {
	mime string
	exts []string
}{
	{"image/jpeg", []string{".jpg", ".jpeg", ".jpe", ".jfif"}},
	{"image/png", []string{".png"}},
	{"image/gif", []string{".gif"}},
	{"image/webp", []string{".webp"}},
	{"image/heic", []string{".heic", ".heif"}},
	{"image/bmp", []string{".bmp"}},
	{"application/pdf", []string{".pdf"}},
	{"audio/ogg", []string{".ogg", ".oga", ".opus"}},
	{"audio/opus", []string{".opus", ".ogg", ".oga"}},
	{"application/ogg", []string{".ogg", ".oga", ".opus"}},
	{"audio/mpeg", []string{".mp3"}},
	{"audio/mp4", []string{".m4a"}},
	{"audio/x-m4a", []string{".m4a"}},
	{"audio/aac", []string{".aac"}},
	{"audio/x-aac", []string{".aac"}},
	{"audio/flac", []string{".flac"}},
	{"audio/x-flac", []string{".flac"}},
	{"audio/wave", []string{".wav"}},
	{"audio/wav", []string{".wav"}},
	{"audio/x-wav", []string{".wav"}},
	{"video/mp4", []string{".mp4", ".m4v"}},
	{"video/webm", []string{".webm"}},
	{"video/quicktime", []string{".mov"}},
	{"text/plain", []string{".txt"}},
	{"text/csv", []string{".csv"}},
	{"text/css", []string{".css"}},
	{"text/markdown", []string{".md", ".markdown"}},
	{"application/json", []string{".json"}},
	{"application/zip", []string{".zip"}},
}

// extOf and extTypes index typeExts and zipTypes both ways.
var extOf, extTypes = func() (map[string][]string, map[string]string) {
	of, types := map[string][]string{}, map[string]string{}
	for _, te := range typeExts {
		of[te.mime] = te.exts
		for _, ext := range te.exts {
			if _, ok := types[ext]; !ok {
				types[ext] = te.mime
			}
		}
	}
	for t, ext := range zipTypes {
		of[t] = []string{ext}
		types[ext] = t
	}
	return of, types
}()

// TypeByExtension is the type a file name's extension suggests, or "".
func TypeByExtension(name string) string {
	ext := strings.ToLower(filepath.Ext(name))
	if t, ok := extTypes[ext]; ok {
		return t
	}
	t, _, _ := strings.Cut(mime.TypeByExtension(ext), ";")
	return t
}

// Declared is the type a sender claims for a file: its MIME type, or,
// when that says nothing specific, what the file name's extension says.
func Declared(mimeType, name string) string {
	m := CleanMIME(mimeType)
	if m == "" || m == "application/octet-stream" || m == "application/zip" || m == "binary/octet-stream" {
		if t := TypeByExtension(name); t != "" {
			return t
		}
	}
	return m
}

// sniffZip tells a zip-based document from a plain zip where its first
// bytes can: OpenDocument and EPUB start with an uncompressed "mimetype"
// entry naming their type; an OOXML file cannot be told from its head, so
// it stays application/zip for SniffAt (which reads the entry names) or
// DecideMIME (which trusts a declared document type) to settle.
func sniffZip(head []byte) string {
	const nameAt = 30
	if len(head) > nameAt+8 && string(head[nameAt:nameAt+8]) == "mimetype" && head[8] == 0 && head[9] == 0 {
		nameLen := int(head[26]) | int(head[27])<<8
		extraLen := int(head[28]) | int(head[29])<<8
		if start := nameAt + nameLen + extraLen; nameLen == 8 && start < len(head) {
			// Stored, so the type follows as is; its size may be in a data
			// descriptor after it rather than in the header.
			for t := range zipTypes {
				if rest := head[start:]; bytes.HasPrefix(rest, []byte(t)) && (len(rest) == len(t) || rest[len(t)] == 'P') {
					return t
				}
			}
		}
	}
	return "application/zip"
}

// Bounds of SniffAt's look inside a zip. The central directory is all it
// reads (never a member's data, except a "mimetype" entry of a few bytes),
// and only so much of it: a directory of millions of entries is refused
// after zipDirBudget bytes, so a zip bomb costs a few hundred KB of reading
// and never a decompression. A real document's directory is a few KB.
const (
	zipDirBudget   = 256 << 10
	zipEntriesSeen = 1024
	zipMimetypeMax = 128
)

// SniffAt names the type of the size bytes r holds: Sniff of its first
// bytes and, for a zip, what its entries say it is — a DOCX, XLSX, PPTX,
// OpenDocument or EPUB posted as x.bin or with no name is still that, not
// application/zip. It reads with ReadAt only.
func SniffAt(r io.ReaderAt, size int64) (string, error) {
	head := make([]byte, min(SniffLen, max(size, 0)))
	n, err := r.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("sniff: %w", err)
	}
	t := Sniff(head[:n])
	if t != "application/zip" {
		return t, nil
	}
	if doc := zipDocument(r, size); doc != "" {
		return doc, nil
	}
	return t, nil
}

// zipDocument is the document type a zip's entries name, or "" for a
// plain zip or one that cannot be read within the bounds. The OOXML
// formats are told by their main part at its conventional name, as
// libmagic does; OpenDocument and EPUB by their mimetype entry.
func zipDocument(r io.ReaderAt, size int64) string {
	zr, err := zip.NewReader(&budgetReader{r: r, left: zipDirBudget + 66<<10}, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return ""
	}
	var contentTypes bool
	main := ""
	for i, f := range zr.File {
		if i == zipEntriesSeen {
			break
		}
		switch f.Name {
		case "[Content_Types].xml":
			contentTypes = true
		case "word/document.xml":
			main = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
		case "xl/workbook.xml":
			main = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
		case "ppt/presentation.xml":
			main = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
		case "mimetype":
			if t := zipMimetype(f); t != "" {
				return t
			}
		}
	}
	if contentTypes && main != "" {
		return main
	}
	return ""
}

// zipMimetype is the known type a "mimetype" entry names, or "". At most
// zipMimetypeMax bytes are decompressed, whatever its header claims.
func zipMimetype(f *zip.File) string {
	if f.UncompressedSize64 > zipMimetypeMax || (f.Method != zip.Store && f.Method != zip.Deflate) {
		return ""
	}
	rc, err := f.Open()
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, zipMimetypeMax))
	if err != nil {
		return ""
	}
	t := strings.TrimSpace(string(b))
	if _, ok := zipTypes[t]; ok {
		return t
	}
	return ""
}

// budgetReader fails reads once left bytes have been read, so archive/zip
// gives up on a central directory too large to be a document's.
type budgetReader struct {
	r    io.ReaderAt
	left int64
}

var errZipBudget = errors.New("zip directory larger than a document's")

func (b *budgetReader) ReadAt(p []byte, off int64) (int, error) {
	if int64(len(p)) > b.left {
		return 0, errZipBudget
	}
	b.left -= int64(len(p))
	return b.r.ReadAt(p, off)
}

// DecideMIME picks the type to trust: what the bytes say, unless the bytes
// only say "some text" or "some binary" and the sender's claim is
// consistent with that. A PNG named .pdf becomes image/png; HTML named .jpg
// becomes text/html and is never handed to the model as an image.
func DecideMIME(declared, sniffed string) string {
	declared = CleanMIME(declared)
	switch {
	case declared == "":
		return sniffed
	case sniffed == "application/octet-stream":
		// Unknown bytes cannot be an image we could not recognise.
		if strings.HasPrefix(declared, "image/") || strings.HasPrefix(declared, "text/") {
			return sniffed
		}
		return declared
	case sniffed == "text/plain":
		if strings.HasPrefix(declared, "text/") || declared == "application/json" || strings.HasSuffix(declared, "+json") ||
			strings.HasSuffix(declared, "xml") || declared == "application/x-yaml" {
			return declared
		}
		return sniffed
	case sniffed == "application/ogg" && strings.HasPrefix(declared, "audio/"):
		return declared
	case sniffed == "application/zip" && zipTypes[declared] != "":
		// A generic container never overrides the specific format in it.
		return declared
	case sniffed == "video/mp4" && (declared == "audio/mp4" || declared == "audio/x-m4a" || declared == "video/quicktime"):
		return declared
	}
	return sniffed
}

// Ext is the file extension botd gives a type.
func Ext(mime string) string {
	if mime == "text/html" {
		return ".html.txt" // never something a browser or viewer would render
	}
	if exts := extOf[mime]; len(exts) > 0 {
		return exts[0]
	}
	return ".bin"
}

// ExtFits reports whether a file with extension ext may keep it when its
// bytes are of type mime: the type's own extension or one it is also known
// by (.jpeg for image/jpeg, .opus for audio/ogg).
func ExtFits(ext, mime string) bool {
	if strings.EqualFold(ext, Ext(mime)) {
		return true
	}
	for _, e := range extOf[mime] {
		if strings.EqualFold(ext, e) {
			return true
		}
	}
	return false
}

// FileMIME is the one answer to "what type is this file": its first bytes,
// reconciled with the type its extension suggests the way DecideMIME
// reconciles a sender's claim (an extension can name a document format
// the sniffer does not know, never turn unknown bytes into an image). It
// reads with ReadAt, so f's offset is left alone.
func FileMIME(f *os.File) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("sniff %s: %w", filepath.Base(f.Name()), err)
	}
	sniffed, err := SniffAt(f, fi.Size())
	if err != nil {
		return "", fmt.Errorf("sniff %s: %w", filepath.Base(f.Name()), err)
	}
	return DecideMIME(TypeByExtension(f.Name()), sniffed), nil
}
