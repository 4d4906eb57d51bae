package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// maxScanPages is how many pages of a scanned PDF are shown as images at
// once: each costs as much as a photo.
const maxScanPages = 4

// errNoRasterizer: pdftoppm (poppler-utils) is not installed.
var errNoRasterizer = errors.New("pdftoppm is not on PATH (install poppler-utils to see scanned PDF pages)")

// renderPages draws pages first..last (at most maxScanPages) of the PDF
// at path as JPEGs with pdftoppm, for a model that can look at them.
func renderPages(ctx context.Context, path string, first, last int) ([][]byte, error) {
	bin, err := exec.LookPath("pdftoppm")
	if err != nil {
		return nil, errNoRasterizer
	}
	last = min(last, first+maxScanPages-1)
	dir, err := os.MkdirTemp("", "botd-scan-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cctx, cancel := context.WithTimeout(ctx, documentTimeout)
	defer cancel()
	msg, err := exec.CommandContext(cctx, bin, "-jpeg", "-r", "110", "-scale-to", "1568", "-f", strconv.Itoa(first), "-l", strconv.Itoa(last),
		path, filepath.Join(dir, "page")).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("pdftoppm: %w: %s", err, bytes.TrimSpace(msg[:min(len(msg), 300)]))
	}
	names, err := filepath.Glob(filepath.Join(dir, "page*.jpg"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names) // pdftoppm pads page numbers to one width
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err == nil && len(b) > 0 {
			out = append(out, b)
		}
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
