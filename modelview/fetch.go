package modelview

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/botd-dev/botd/doctext"
	"github.com/botd-dev/botd/ffmpeg"
	"github.com/botd-dev/botd/mediaregistry"
	registry "github.com/botd-dev/botd/tools"
)

func (t *Session) FetchMedia(ctx context.Context, in registry.Args) *registry.Result {
	ref, _, err := registry.StringArg(in, "mediaRef")
	if err != nil {
		return registry.BadArgs(registry.FetchMedia, "%v", err)
	}
	// Models often copy the whole "ref:tg_..." field from the placeholder.
	ref = strings.TrimPrefix(strings.TrimSpace(ref), "ref:")
	if ref == "" {
		return registry.BadArgs(registry.FetchMedia, "mediaRef is required")
	}
	if !mediaregistry.ValidRefID(ref) {
		return registry.BadArgs(registry.FetchMedia, "%q is not a media ref; use the ref:... field of a placeholder, e.g. tg_k3J9x2Qa7P", registry.OneLine(ref, 80))
	}
	pages, _, err := registry.StringArg(in, "pages")
	if err != nil {
		return registry.BadArgs(registry.FetchMedia, "%v", err)
	}
	var res registry.FetchMediaResult
	f, rel, fail := t.callPlaced(ctx, registry.FetchMedia, registry.FetchMedia, registry.FetchMediaArgs{MediaRef: ref}, &res, &res)
	if fail != nil {
		return fail
	}
	defer f.Close()
	r := t.fetchResult(ctx, res, f, rel, strings.TrimSpace(pages))
	if !r.IsError {
		r.Fetched = &res
	}
	return r
}

// placeTries bounds how often a fetch is asked for again when the group's
// copy it placed is gone before it could be opened here.
const placeTries = 3

// callPlaced runs a fetch on the host (typ, args; the answer in out, whose
// file is res) and opens the group's copy it placed. The host holds the
// copy only while it answers: the disk budget may evict it before it is
// opened here (a guest's uploads filling the budget, say). Asked again,
// the host places it again from the cache, the upload that is its only
// copy or the network, so the copy being gone is never the model's
// error; once open, an eviction no longer matters. A failure never names
// a path: the log has it.
func (t *Session) callPlaced(ctx context.Context, tool, typ string, args, out any, res *registry.FetchMediaResult) (*os.File, string, *registry.Result) {
	for try := 1; ; try++ {
		if err := t.Call(ctx, typ, args, out); err != nil {
			return nil, "", registry.ToolError(tool, err)
		}
		f, rel, err := t.ws.Open(res.Path)
		if err == nil {
			return f, rel, nil
		}
		if errors.Is(err, fs.ErrNotExist) && try < placeTries {
			t.log.Info("mcp "+tool+": the group's copy was evicted before it was opened; fetching again", "ref", res.Ref, "path", res.Path, "try", try)
			continue
		}
		t.log.Warn("mcp "+tool+": cannot open the fetched file", "ref", res.Ref, "path", res.Path, "err", err)
		why := ""
		if errors.Is(err, fs.ErrNotExist) {
			why = " (media.max_disk_bytes is too small for what is in use: it was evicted each time as soon as it was saved)"
		}
		return nil, "", registry.ToolError(tool, registry.Errorf(registry.CodeInternal, "the group's copy of %s could not be opened%s", res.Ref, why))
	}
}

// keyframeCount is how many stills of a video the model sees: enough to
// follow what happens, few enough to stay cheap.
const keyframeCount = 4

// fetchResult builds what the model sees from the file the host saved,
// opened (callPlaced) as f at rel.
func (t *Session) fetchResult(ctx context.Context, res registry.FetchMediaResult, f *os.File, rel, pages string) *registry.Result {
	// Why a transcription failed is an error of the host's (provider URL,
	// paths): the model reads it rewritten.
	res.TranscriptNote = ForModel(res.TranscriptNote, t.ws.Root)
	fi, err := f.Stat()
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		t.log.Warn("mcp fetch_media: cannot read the fetched file", "ref", res.Ref, "path", rel, "err", err)
		return registry.ToolError(registry.FetchMedia, registry.Errorf(registry.CodeInternal, "the group's copy of %s cannot be read", res.Ref))
	}

	m := mediaInfo{res: res, rel: rel, abs: f.Name(), size: fi.Size()}
	m.mime = mediaregistry.CleanMIME(res.MIME)
	if m.mime == "" {
		m.mime, _ = mediaregistry.FileMIME(f)
	}

	var note string
	switch {
	case m.mime == "image/svg+xml":
		// Markup, not pixels: it can carry scripts, and a client shown it
		// as an image would render it.
		note = "SVG can carry scripts, so it is never shown as an image."
	case strings.HasPrefix(m.mime, "image/"):
		r, why := t.imageResult(ctx, f, &m)
		if r != nil {
			return r
		}
		note = why
	case readAsText(&m, t.inlineMax):
		if r := t.documentResult(ctx, f, &m, pages); r != nil {
			return r
		}
	case strings.HasPrefix(m.mime, "video/"):
		frames, at, err := ffmpeg.Keyframes(ctx, f, keyframeCount, ffmpeg.Options{Limits: t.parse, Log: t.log})
		if len(frames) == 0 {
			t.log.Info("mcp fetch_media: no frames of the video", "ref", res.Ref, "err", err)
			note = fmt.Sprintf("No frames of the video are shown: %v.", err)
			break
		}
		var when []string
		for _, d := range at {
			when = append(when, ffmpeg.Clock(d))
		}
		r := registry.TextResult(m.describe(fmt.Sprintf("Shown: %d frames of the video, at %s.",
			len(frames), strings.Join(when, ", "))))
		for _, fr := range frames {
			r.Parts = append(r.Parts, registry.Image(base64.StdEncoding.EncodeToString(fr), "image/jpeg"))
		}
		r.Parts = append(r.Parts, savedLink(&m))
		return r
	}
	if m.size <= t.inlineMax && embeddable(m.mime) {
		if r := t.embedResult(f, &m, note); r != nil {
			return r
		}
	}
	if strings.HasPrefix(m.mime, "audio/") || strings.HasPrefix(m.mime, "video/") {
		r := registry.TextResult(m.describe(note))
		r.Parts = append(r.Parts, savedLink(&m))
		return r
	}
	return registry.TextResult(m.describe(note))
}

// readAsText reports documents the model gets as text: PDFs, office and
// e-book formats, HTML and CSV whatever their size (markup and separators
// are the model's to wade through otherwise, and a page's scripts and
// styles cost tokens and say nothing), and other text too long to attach
// whole.
func readAsText(m *mediaInfo, inlineMax int64) bool {
	format := doctext.Format(m.res.Name, m.mime)
	if format == "" {
		format = doctext.Format(m.rel, m.mime)
	}
	switch format {
	case "":
		return false
	case "html", "csv":
		return true
	}
	return !isTextMIME(m.mime) || m.size > inlineMax
}

// documentResult is a document's text, a page range at a time, inside a
// <document> element that escapes it; nil when doctext cannot read the
// format (the caller falls back to the path). A scanned PDF small enough
// is attached as well, for a model that reads PDFs itself.
func (t *Session) documentResult(ctx context.Context, f *os.File, m *mediaInfo, pages string) *registry.Result {
	name := m.res.Name
	if name == "" {
		name = m.rel
	}
	doc, err := t.documentText(ctx, f, m, name, pages)
	switch {
	case errors.Is(err, doctext.ErrUnsupported):
		return nil
	case errors.Is(err, doctext.ErrPages):
		return registry.BadArgs(registry.FetchMedia, "%v", err)
	case err != nil:
		t.log.Info("mcp fetch_media: document not read", "ref", m.res.Ref, "err", err)
		note := fmt.Sprintf("Its text could not be read: %v.", err)
		if m.size <= t.inlineMax && embeddable(m.mime) {
			// A model that reads PDFs itself may still make sense of it.
			if r := t.embedResult(f, m, note); r != nil {
				return r
			}
		}
		return registry.TextResult(m.describe(note))
	}
	text := m.describe("") + "\n" + doc.Text
	if doc.NoText && m.mime == "application/pdf" {
		// Scanned: the pages as pictures, for a model that can look.
		if first, last, ok := pageRange(doc.Shown); ok {
			imgs, err := t.renderPages(ctx, f, first, last)
			if err == nil {
				r := registry.TextResult(text + fmt.Sprintf("\nShown: pages %d-%d as images.", first, first+len(imgs)-1))
				for _, img := range imgs {
					r.Parts = append(r.Parts, registry.Image(base64.StdEncoding.EncodeToString(img), "image/jpeg"))
				}
				return r
			}
			t.log.Info("mcp fetch_media: scanned pages not drawn", "ref", m.res.Ref, "err", err)
			text += "\nIts pages cannot be shown as images: " + err.Error() + "."
		}
	}
	if doc.NoText && m.mime == "application/pdf" && m.size <= t.inlineMax {
		if r := t.embedResult(f, m, doc.Text); r != nil {
			return r
		}
	}
	return registry.TextResult(text)
}

// savedLink points at the saved file as a resource link, the part's Saved
// its group path: a model that hears audio or watches video natively is
// given the file itself by an agent that can open it.
func savedLink(m *mediaInfo) registry.Part {
	l := registry.Link((&url.URL{Scheme: "file", Path: m.abs}).String(), m.rel, "the saved file", m.mime)
	l.Saved = m.rel
	return l
}

// mediaInfo is the fetched file as the result text describes it.
type mediaInfo struct {
	res           registry.FetchMediaResult
	rel, abs      string
	mime          string
	size          int64
	width, height int
}

// describe renders the metadata line and the saved path. Names, captions
// and senders come from strangers and are cleaned the way placeholders are.
func (m *mediaInfo) describe(note string) string {
	var b strings.Builder
	kind := m.res.Kind
	if kind == "" {
		kind = "Media"
	}
	fields := []string{}
	if m.res.Name != "" {
		fields = append(fields, mediaregistry.SafeName(m.res.Name))
	}
	if m.res.Duration != "" {
		fields = append(fields, registry.OneLine(m.res.Duration, 16))
	}
	fields = append(fields, mediaregistry.FormatSize(m.size))
	if m.mime != "" {
		fields = append(fields, m.mime)
	}
	if d := mediaregistry.CleanMIME(m.res.Declared); d != "" && d != m.mime {
		fields = append(fields, "sent as "+d)
	}
	w, h := m.width, m.height
	if w == 0 {
		w, h = m.res.Width, m.res.Height
	}
	if w > 0 && h > 0 {
		fields = append(fields, fmt.Sprintf("%dx%d", w, h))
	}
	if m.res.Sender != "" {
		fields = append(fields, "from "+registry.OneLine(m.res.Sender, 80))
	}
	fmt.Fprintf(&b, "%s ref:%s: %s", kind, registry.OneLine(m.res.Ref, 80), strings.Join(fields, ", "))
	if m.res.Caption != "" {
		b.WriteString(" — caption: ")
		b.WriteString(mediaregistry.SafeCaption(m.res.Caption))
	}
	// Both paths: an agent in a container sees the group folder mounted
	// elsewhere, a local one can open the absolute path directly.
	fmt.Fprintf(&b, "\nSaved in the group folder as %s (absolute path: %s)", m.rel, m.abs)
	if note != "" {
		b.WriteString("\n")
		b.WriteString(note)
	}
	if m.res.TranscriptNote != "" {
		b.WriteString("\n")
		b.WriteString(m.res.TranscriptNote)
	}
	if m.res.Transcript != "" {
		// What was said comes from a chat member: escaped, so it cannot
		// close the element and pose as anything else.
		b.WriteString("\n<transcript>\n")
		b.WriteString(xmlText.Replace(m.res.Transcript))
		b.WriteString("\n</transcript>")
	}
	return b.String()
}

var xmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// embeddable reports documents worth handing over as an embedded resource
// when small: PDFs and anything textual.
func embeddable(mime string) bool {
	return mime == "application/pdf" || isTextMIME(mime)
}

func isTextMIME(mime string) bool {
	if strings.HasPrefix(mime, "text/") || strings.HasSuffix(mime, "+json") || strings.HasSuffix(mime, "+xml") {
		return true
	}
	switch mime {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml", "application/toml",
		"application/javascript", "application/x-javascript", "application/ecmascript", "application/csv",
		"application/x-sh", "application/x-shellscript", "application/sql", "application/x-ndjson",
		"application/ld+json", "application/x-subrip":
		return true
	}
	return false
}

// displayOnlyText are the text types an embedded resource keeps: data a
// client can only display. Every other text goes as text/plain, because
// clients render some types and strangers choose them: SVG and HTML run
// scripts, MCP-UI renders text/html and text/uri-list resources.
var displayOnlyText = map[string]bool{
	"text/plain": true, "text/csv": true, "text/tab-separated-values": true,
	"application/json": true, "application/x-ndjson": true, "application/x-subrip": true,
	"application/yaml": true, "application/x-yaml": true, "application/toml": true,
}

// embedResult returns the metadata text plus the file as an embedded
// resource, or nil when the file cannot be read (the caller falls back to
// the path alone).
func (t *Session) embedResult(f *os.File, m *mediaInfo, note string) *registry.Result {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil
	}
	data, err := readSmall(f, m.size, t.inlineMax)
	if err != nil {
		return nil
	}
	uri := (&url.URL{Scheme: "file", Path: m.abs}).String()
	var rc registry.Part
	attached := "The content is attached as an embedded resource."
	switch {
	case m.mime == "application/pdf", displayOnlyText[m.mime] && !utf8.Valid(data):
		rc = registry.BlobResource(uri, m.mime, base64.StdEncoding.EncodeToString(data))
	case displayOnlyText[m.mime]:
		rc = registry.TextResource(uri, m.mime, string(data))
	case !utf8.Valid(data):
		// Not text in any charset we could name, and as a blob it would
		// keep a type that renders.
		return nil
	default:
		rc = registry.TextResource(uri, "text/plain", string(data))
		attached = "Its source is attached as plain text."
	}
	return registry.PartsResult(registry.Text(m.describe(note)+"\n"+attached), rc)
}

// readSmall reads a file of the stat'ed size in one allocation, refusing
// one that grew past limit since.
func readSmall(f *os.File, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("%d bytes exceed %d", size, limit)
	}
	// One byte more than expected tells a file that grew from one that
	// did not, without a second read.
	buf := make([]byte, size+1)
	n, err := io.ReadFull(f, buf)
	switch {
	case err == nil:
		return nil, fmt.Errorf("file grew past %d bytes", size)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return buf[:n], nil
	default:
		return nil, err
	}
}
