package pdf

import (
	"io/fs"
	"testing"
)

// TestPredefinedCMaps: every embedded table decodes, and known codes map
// where Adobe's files say.
func TestPredefinedCMaps(t *testing.T) {
	names, err := fs.Glob(cmapFiles, "cmaps/*")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range names {
		if n == "cmaps/README.md" {
			continue
		}
		tb := predefinedCMap(n[len("cmaps/"):])
		if tb == nil {
			t.Errorf("%s does not decode", n)
			continue
		}
		total += tb.size
	}
	// Every table decoded at once is the most the tables can take.
	t.Logf("%d tables, %d KB decoded", len(names)-1, total>>10)
	if total > 8<<20 {
		t.Errorf("the tables take %d KB decoded", total>>10)
	}
	cases := []struct {
		table string
		code  uint32
		n     int
		want  uint32
	}{
		{"90ms-RKSJ-H", 0x41, 1, 264},      // A, half-width
		{"90ms-RKSJ-H", 0x82a0, 2, 843},    // あ
		{"90ms-RKSJ-V", 0x8141, 2, 7887},   // 、 vertical form
		{"UniJIS-UCS2-H", 0x65e5, 2, 3284}, // 日
		{"UniGB-UCS2-H", 0x4e2d, 2, 4559},
		{"GBK-EUC-H", 0xd6d0, 2, 4559}, // 中
		{"Adobe-Japan1-UCS2", 843, 2, 0x3042},
		{"Adobe-GB1-UCS2", 4559, 2, 0x4e2d},
	}
	for _, c := range cases {
		got, ok := predefinedCMap(c.table).lookup(c.code, c.n)
		if !ok || got != c.want {
			t.Errorf("%s %x: %d %v, want %d", c.table, c.code, got, ok, c.want)
		}
	}
	if predefinedCMap("../pdf.go") != nil || predefinedCMap("NoSuch-H") != nil {
		t.Error("a name that is no table gave one")
	}
	if !predefinedCMap("UniJIS-UCS2-V").vertical || predefinedCMap("UniJIS-UCS2-H").vertical {
		t.Error("writing mode")
	}
}
