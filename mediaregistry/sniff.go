package mediaregistry

import (
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

// extTypes name the types of extensions Go's mime table may lack (it
// depends on the machine's /etc/mime.types), so a .docx is a document on
// every machine.
var extTypes = func() map[string]string {
	m := map[string]string{".csv": "text/csv", ".md": "text/markdown"}
	for t, ext := range zipTypes {
		m[ext] = t
	}
	return m
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
// it stays application/zip for DecideMIME to reconcile with the declared
// type.
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
	switch mime {
	case "image/jpeg":
		return ".jpg"
	case "image/png":
		return ".png"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "image/heic":
		return ".heic"
	case "image/bmp":
		return ".bmp"
	case "application/pdf":
		return ".pdf"
	case "audio/ogg", "application/ogg":
		return ".ogg"
	case "audio/mpeg":
		return ".mp3"
	case "audio/mp4", "audio/x-m4a":
		return ".m4a"
	case "audio/wave", "audio/wav":
		return ".wav"
	case "video/mp4":
		return ".mp4"
	case "video/webm":
		return ".webm"
	case "video/quicktime":
		return ".mov"
	case "text/plain":
		return ".txt"
	case "text/html":
		return ".html.txt" // never something a browser or viewer would render
	case "text/csv":
		return ".csv"
	case "application/json":
		return ".json"
	case "application/zip":
		return ".zip"
	case "text/markdown":
		return ".md"
	}
	if ext, ok := zipTypes[mime]; ok {
		return ext
	}
	return ".bin"
}

// FileMIME is the one answer to "what type is this file": its first bytes,
// reconciled with the type its extension suggests the way DecideMIME
// reconciles a sender's claim (an extension can name a document format
// the sniffer does not know, never turn unknown bytes into an image). It
// reads with ReadAt, so f's offset is left alone.
func FileMIME(f *os.File) (string, error) {
	head := make([]byte, SniffLen)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("sniff %s: %w", filepath.Base(f.Name()), err)
	}
	return DecideMIME(TypeByExtension(f.Name()), Sniff(head[:n])), nil
}
