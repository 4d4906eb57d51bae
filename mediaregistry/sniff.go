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
	}
	m, _, _ := strings.Cut(http.DetectContentType(head), ";")
	return m
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
	return DecideMIME(mime.TypeByExtension(filepath.Ext(f.Name())), Sniff(head[:n])), nil
}
