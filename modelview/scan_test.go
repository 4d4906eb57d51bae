package modelview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
	registry "github.com/botd-dev/botd/tools"
)

// A scanned PDF (pages of images, no text layer) says so, and its pages
// are shown as images when pdftoppm is installed.
func TestScannedPDF(t *testing.T) {
	scan := doctexttest.PDF([]doctexttest.Page{{Image: true}, {Image: true}}, doctexttest.PDFOptions{})
	fetch := func(t *testing.T) ([]string, int) {
		h := newFakeHost(t, "family")
		h.add(media("tg_ScannedDoc01", "Document", "application/pdf", "media/tg_ScannedDoc01.pdf", scan))
		res := callTool(t, connect(t, newTestServer(t, h, 16)), registry.FetchMedia, map[string]any{"mediaRef": "tg_ScannedDoc01"})
		texts, images, _ := parts(t, res)
		if res.IsError {
			t.Fatalf("error: %q", texts)
		}
		return texts, len(images)
	}
	t.Run("pdftoppm installed", func(t *testing.T) {
		if _, err := os.Stat("/bin/sh"); err != nil {
			t.Skip("no /bin/sh for the stand-in")
		}
		bin := t.TempDir()
		// pdftoppm -jpeg ... -f 1 -l 2 IN PREFIX: one JPEG per page.
		script := "#!/bin/sh\nfor a; do prefix=$a; done\nprintf '\\377\\330one' > \"$prefix-1.jpg\"\nprintf '\\377\\330two' > \"$prefix-2.jpg\"\n"
		if err := os.WriteFile(filepath.Join(bin, "pdftoppm"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin:/bin")
		texts, images := fetch(t)
		if images != 2 || !strings.Contains(texts[0], "Shown: pages 1-2 as images.") || !strings.Contains(texts[0], "scanned") {
			t.Errorf("images=%d text:\n%s", images, texts[0])
		}
	})
	t.Run("no pdftoppm", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		texts, images := fetch(t)
		if images != 0 || !strings.Contains(texts[0], "poppler-utils") || !strings.Contains(texts[0], "scanned") {
			t.Errorf("images=%d text:\n%s", images, texts[0])
		}
	})
}
