package agent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/atomicfile"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/tools"
)

// inlineDir is where image and blob content that a tool returned inline is
// written (content-addressed) inside the group folder, so the model request
// refers to a file and the bytes never live in the transcript.
const inlineDir = "media/inline"

// resultParts turns a tool result into the content of a tool_result part.
// Images become file-backed image parts the model sees (when it can see);
// everything else stays text, with saved paths spelled out. A part that
// is a file botd saved (tools.Part.Saved) is handed over as that file.
func resultParts(ctx context.Context, ws groups.Workspace, res *tools.Result, caps llm.Capabilities, describe Describe) []llm.Part {
	var parts []llm.Part
	for _, p := range res.Parts {
		switch p.Kind {
		case tools.PartImage:
			parts = append(parts, imagePart(ctx, ws, p, caps, describe))
		case tools.PartAudio:
			parts = append(parts, blobPart(ws, p.Data, p.MIME, "audio", caps))
		case tools.PartTextResource:
			parts = append(parts, llm.Text(fmt.Sprintf("Resource %s (%s):\n%s", p.URI, p.MIME, p.Text)))
		case tools.PartBlobResource:
			parts = append(parts, blobPart(ws, p.Data, p.MIME, "document", caps))
		case tools.PartLink:
			parts = append(parts, linkPart(ws, p, caps))
		default:
			parts = append(parts, llm.Text(p.Text))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, llm.Text("(no output)"))
	}
	return parts
}

func imagePart(ctx context.Context, ws groups.Workspace, c tools.Part, caps llm.Capabilities, describe Describe) llm.Part {
	mime := mediaregistry.CleanMIME(c.MIME)
	rel, abs, ok := savedImage(ws, c)
	var err error
	if !ok {
		rel, abs, err = saveInline(ws, c.Data, mime)
	}
	if err != nil {
		return llm.Text(fmt.Sprintf("(an image came back but could not be kept: %v)", err))
	}
	if !caps.Vision {
		if describe == nil {
			return llm.Text(fmt.Sprintf("(an image was saved as %s; this model cannot look at images, and no model to describe them is "+
				"configured (media.describe), so tell the person you cannot see it)", rel))
		}
		text, err := describe(ctx, abs, mime)
		if err != nil {
			return llm.Text(fmt.Sprintf("(an image was saved as %s; this model cannot look at images and describing it failed: %v)", rel, err))
		}
		return llm.Text(fmt.Sprintf("(an image, saved as %s; this model cannot look at images, so another model described it:)\n%s", rel, text))
	}
	return llm.ImageFile(mime, abs)
}

func blobPart(ws groups.Workspace, data, mime, what string, caps llm.Capabilities) llm.Part {
	mime = mediaregistry.CleanMIME(mime)
	rel, abs, err := saveInline(ws, data, mime)
	if err != nil {
		return llm.Text(fmt.Sprintf("(%s content came back but could not be kept: %v)", what, err))
	}
	if mime == "application/pdf" && caps.Documents {
		return llm.MediaFile(mime, abs)
	}
	return llm.Text(fmt.Sprintf("(%s content, %s, saved in the group folder as %s)", what, mime, rel))
}

// linkPart gives a model that hears audio or watches video natively the
// saved file a fetch linked to (the part's Saved); any other link stays a
// line of text.
func linkPart(ws groups.Workspace, c tools.Part, caps llm.Capabilities) llm.Part {
	mime := mediaregistry.CleanMIME(c.MIME)
	native := (strings.HasPrefix(mime, "audio/") && caps.Audio) || (strings.HasPrefix(mime, "video/") && caps.Video)
	p := c.Saved
	if native && p != "" {
		if f, _, err := ws.Open(p); err == nil {
			fi, err := f.Stat()
			f.Close()
			if err == nil && fi.Size() <= maxNativeMedia {
				return llm.MediaFile(mime, f.Name())
			}
		}
	}
	return llm.Text(fmt.Sprintf("Resource %s: %s", c.Name, c.URI))
}

// maxNativeMedia is the largest audio or video handed to a model as is:
// what vendors take inline.
const maxNativeMedia = 20 << 20

// savedImage finds the file botd's fetch_media already saved for image
// content that is that file's bytes (the part's Saved), so the image is
// not written to disk a second time. ok is false for previews, other
// servers' images, and a file that no longer matches.
func savedImage(ws groups.Workspace, c tools.Part) (rel, abs string, ok bool) {
	p := c.Saved
	if p == "" {
		return "", "", false
	}
	f, rel, err := ws.Open(p)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() != int64(base64.StdEncoding.DecodedLen(len(c.Data))-padding(c.Data)) {
		return "", "", false
	}
	return rel, f.Name(), true
}

// padding counts the '=' a base64 string ends with.
func padding(s string) int {
	return len(s) - len(strings.TrimRight(s, "="))
}

// saveInline decodes base64 content into media/inline/<sha256><ext>.
// Content addressing makes a repeated fetch reuse the file, and the name
// is all the transcript needs to keep.
func saveInline(ws groups.Workspace, data, mime string) (rel, abs string, err error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(data))
	if err != nil {
		return "", "", fmt.Errorf("bad base64: %w", err)
	}
	if len(raw) == 0 {
		return "", "", errors.New("empty content")
	}
	if mime == "" {
		mime = mediaregistry.Sniff(raw)
	}
	sum := sha256.Sum256(raw)
	name := hex.EncodeToString(sum[:]) + mediaregistry.Ext(mime)
	rel = inlineDir + "/" + name
	abs = filepath.Join(ws.Root, filepath.FromSlash(rel))
	// Through the folder's root: a link planted at media/ or media/inline
	// must not carry the write elsewhere.
	root, err := ws.OpenRoot()
	if err != nil {
		return "", "", fmt.Errorf("save inline content: %w", err)
	}
	defer root.Close()
	if err := root.MkdirAll(inlineDir, 0o750); err != nil {
		return "", "", fmt.Errorf("save inline content: %w", err)
	}
	if fi, err := root.Lstat(rel); err == nil && groups.SoleRegular(fi) && fi.Size() == int64(len(raw)) {
		// Used again: the disk budget evicts least recently used first.
		now := time.Now()
		root.Chtimes(rel, now, now)
		return rel, abs, nil
	}
	tmp := inlineDir + "/" + groups.TempPrefix + uuid.NewString() + "-" + name
	// Not fsynced: the part is a copy of what the conversation holds.
	if err := atomicfile.WriteRoot(root, rel, tmp, 0o640, false, atomicfile.Bytes(raw)); err != nil {
		return "", "", fmt.Errorf("save inline content: %w", err)
	}
	return rel, abs, nil
}
