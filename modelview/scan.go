package modelview

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/botd-dev/botd/internal/box"
)

// maxScanPages is how many pages of a scanned PDF are shown as images at
// once: each costs as much as a photo.
const maxScanPages = 4

// errNoRasterizer: pdftoppm (poppler-utils) is not installed.
var errNoRasterizer = box.Missing("pdftoppm", "install poppler-utils to see scanned PDF pages")

// renderPages draws pages first..last (at most maxScanPages) of the PDF
// in f as JPEGs with pdftoppm, in a child of package box, for a model
// that can look at them.
func (t *Session) renderPages(ctx context.Context, f *os.File, first, last int) ([][]byte, error) {
	last = min(last, first+maxScanPages-1)
	var out [][]byte
	_, err := box.Run(ctx, box.Job{Tool: "pdftoppm", Install: errNoRasterizer.Detail, Input: f, What: "this PDF", Limits: t.parse, Log: t.log,
		Args: []string{"-jpeg", "-r", "110", "-scale-to", "1568", "-f", strconv.Itoa(first), "-l", strconv.Itoa(last), "/dev/fd/3", "page"},
		Collect: func(dir string) error {
			names, err := filepath.Glob(filepath.Join(dir, "page*.jpg"))
			if err != nil {
				return err
			}
			sort.Strings(names) // pdftoppm pads page numbers to one width
			for _, n := range names {
				b, err := os.ReadFile(n)
				if err == nil && len(b) > 0 {
					out = append(out, b)
				}
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("pdftoppm drew no page")
	}
	return out, nil
}

// pageRange reads doctext's "3-5" or "7" into its first and last page.
func pageRange(shown string) (int, int, bool) {
	a, b, ok := strings.Cut(shown, "-")
	first, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil || first < 1 {
		return 0, 0, false
	}
	if !ok {
		return first, first, true
	}
	last, err := strconv.Atoi(strings.TrimSpace(b))
	if err != nil || last < first {
		return 0, 0, false
	}
	return first, last, true
}
