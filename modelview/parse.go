package modelview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/botd-dev/botd/doctext"
	"github.com/botd-dev/botd/internal/box"
)

// The parsers of a member's file run in a child of package box: what a
// hostile document or image can make them allocate is the child's to
// lose, and botd answers a sentence. These are the Go jobs, run in the
// child (the same binary) by name.
const (
	jobDocText = "mcp-doctext"
	jobPreview = "mcp-preview"
)

func init() {
	box.Register(jobDocText, docTextJob)
	box.Register(jobPreview, previewJob)
}

// docTextArgs is what documentText hands the child.
type docTextArgs struct {
	Name, MIME, Pages string
	Size              int64
}

// docTextAnswer is the child's answer: the result, or the error as text
// with the doctext sentinel it wrapped, so errors.Is holds in the parent.
type docTextAnswer struct {
	Doc  doctext.Result
	Err  string
	Kind string
}

// docErrs are the doctext errors the parent tells apart.
var docErrs = map[string]error{
	"unsupported": doctext.ErrUnsupported, "encrypted": doctext.ErrEncrypted, "corrupt": doctext.ErrCorrupt,
	"too-large": doctext.ErrTooLarge, "pages": doctext.ErrPages,
}

func docTextJob(ctx context.Context, in *os.File, arg []byte) ([]byte, error) {
	var a docTextArgs
	if err := json.Unmarshal(arg, &a); err != nil || in == nil {
		return nil, fmt.Errorf("doctext job: bad argument (%v)", err)
	}
	doc, err := doctext.Extract(ctx, in, a.Size, a.Name, a.MIME, doctext.Options{Pages: a.Pages})
	ans := docTextAnswer{Doc: doc}
	if err != nil {
		ans.Err = err.Error()
		for k, e := range docErrs {
			if errors.Is(err, e) {
				ans.Kind = k
			}
		}
	}
	return json.Marshal(ans)
}

// childError is an error that crossed from the child: its text, and the
// sentinel it wrapped there.
type childError struct {
	msg  string
	kind error
}

func (e *childError) Error() string { return e.msg }
func (e *childError) Unwrap() error { return e.kind }

// documentText is doctext.Extract run in a child, over the file f opened
// in the group folder.
func (t *Session) documentText(ctx context.Context, f *os.File, m *mediaInfo, name, pages string) (doctext.Result, error) {
	arg, err := json.Marshal(docTextArgs{Name: name, MIME: m.mime, Pages: pages, Size: m.size})
	if err != nil {
		return doctext.Result{}, err
	}
	what := "this document"
	if m.mime == "application/pdf" {
		what = "this PDF"
	}
	r, err := box.Run(ctx, box.Job{Func: jobDocText, Stdin: arg, Input: f, What: what, Limits: t.parse, Log: t.log})
	if err != nil {
		return doctext.Result{}, err
	}
	var ans docTextAnswer
	if err := json.Unmarshal(r.Stdout, &ans); err != nil {
		return doctext.Result{}, fmt.Errorf("the document reader answered nonsense: %w", err)
	}
	if ans.Err != "" {
		return doctext.Result{}, &childError{msg: ans.Err, kind: docErrs[ans.Kind]}
	}
	return ans.Doc, nil
}

// previewArgs is what the child needs to preview the image in fd 3: the
// header the parent measured, which the child's must match.
type previewArgs struct {
	Size          int64
	Budget        int64
	Orientation   int
	Format        string
	Width, Height int
}

type previewAnswer struct {
	Data          []byte
	MIME          string
	Width, Height int
}

func previewJob(ctx context.Context, in *os.File, arg []byte) ([]byte, error) {
	var a previewArgs
	if err := json.Unmarshal(arg, &a); err != nil || in == nil {
		return nil, fmt.Errorf("preview job: bad argument (%v)", err)
	}
	src := &imageSource{f: in, size: a.Size}
	cfg, format, err := src.config()
	if err != nil {
		return nil, err
	}
	// The file is the group's and may have changed since the parent
	// weighed its header: only the image that was weighed is decoded.
	if format != a.Format || cfg.Width != a.Width || cfg.Height != a.Height {
		return nil, fmt.Errorf("the image changed while being read: %dx%d %s, was %dx%d %s",
			cfg.Width, cfg.Height, format, a.Width, a.Height, a.Format)
	}
	data, mime, w, h, err := src.preview(ctx, a.Budget, a.Orientation)
	if err != nil {
		return nil, err
	}
	return json.Marshal(previewAnswer{Data: data, MIME: mime, Width: w, Height: h})
}

// previewInBox makes the preview of the image whose header src read, in
// a child.
func (t *Session) previewInBox(ctx context.Context, src *imageSource, orientation int) ([]byte, string, int, int, error) {
	arg, err := json.Marshal(previewArgs{Size: src.size, Budget: t.inlineMax, Orientation: orientation,
		Format: src.format, Width: src.cfg.Width, Height: src.cfg.Height})
	if err != nil {
		return nil, "", 0, 0, err
	}
	lim := t.parse
	// The preview comes back base64'd in JSON.
	lim.Output = max(lim.Output, 2*t.inlineMax+64<<10)
	r, err := box.Run(ctx, box.Job{Func: jobPreview, Stdin: arg, Input: src.f, What: "this image", Limits: lim, Log: t.log})
	if err != nil {
		return nil, "", 0, 0, err
	}
	var ans previewAnswer
	if err := json.Unmarshal(r.Stdout, &ans); err != nil {
		return nil, "", 0, 0, fmt.Errorf("the image previewer answered nonsense: %w", err)
	}
	return ans.Data, ans.MIME, ans.Width, ans.Height, nil
}
