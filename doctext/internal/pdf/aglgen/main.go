// Command aglgen builds the glyph tables the PDF reader embeds
// (doctext/internal/pdf/glyphs): the Adobe Glyph List (glyph name to
// Unicode, with the ITC Zapf Dingbats list apart) and the glyph names of
// the simple fonts' predefined encodings (Standard, WinAnsi, MacRoman,
// MacExpert, Symbol, ZapfDingbats), which give the text of fonts that
// carry no ToUnicode map, as pdftotext reads them.
//
// The sources are Adobe's lists (BSD-3-Clause) as Ghostscript installs
// them in its Decoding resource, and the encodings as Ghostscript defines
// them (it prints them itself):
//
//	go run ./aglgen -gs /usr/share/ghostscript/10.00.0/Resource -out glyphs
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// encodings are Ghostscript's names of the encodings, and the reader's.
var encodings = [][2]string{
	{"StandardEncoding", "Standard"}, {"WinAnsiEncoding", "WinAnsi"}, {"MacRomanEncoding", "MacRoman"},
	{"MacExpertEncoding", "MacExpert"}, {"SymbolEncoding", "Symbol"}, {"DingbatsEncoding", "ZapfDingbats"},
}

func main() {
	res := flag.String("gs", "/usr/share/ghostscript/10.00.0/Resource", "Ghostscript's Resource directory")
	out := flag.String("out", "glyphs", "directory to write the tables to")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	agl, zapf, err := readDecoding(filepath.Join(*res, "Decoding", "Unicode"))
	if err != nil {
		log.Fatal(err)
	}
	write(filepath.Join(*out, "agl.txt"), agl)
	write(filepath.Join(*out, "zapf.txt"), zapf)
	var enc bytes.Buffer
	for _, e := range encodings {
		names, err := encoding(e[0])
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(&enc, "%s %s\n", e[1], strings.Join(names, " "))
	}
	if err := os.WriteFile(filepath.Join(*out, "encodings.txt"), enc.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	std, err := cffStrings(filepath.Join(*res, "..", "lib", "gs_css_e.ps"))
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*out, "cffstd.txt"), []byte(strings.Join(std, " ")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
}

// cffStrings reads the 391 standard strings of the CFF format (Adobe
// TN 5176, appendix A), the glyph names of SIDs under 391.
func cffStrings(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, body, ok := strings.Cut(string(b), "/CFFStandardStrings mark")
	if !ok {
		return nil, fmt.Errorf("%s: no CFFStandardStrings", path)
	}
	body, _, _ = strings.Cut(body, "counttomark")
	var names []string
	for line := range strings.SplitSeq(body, "\n") {
		line, _, _ = strings.Cut(line, "%")
		for _, f := range strings.Fields(line) {
			names = append(names, strings.TrimPrefix(f, "/"))
		}
	}
	if len(names) != 391 {
		return nil, fmt.Errorf("%s: %d standard strings, want 391", path, len(names))
	}
	return names, nil
}

// write puts one "name hex[ hex…]" line a glyph, sorted by name.
func write(path string, m map[string]string) {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, m[n])
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%s: %d names, %d bytes", path, len(names), b.Len())
}

// readDecoding reads Ghostscript's table: columns apart by two spaces,
// the code points first, then the names of AGLFN, of the AGL beyond it,
// of the Zapf Dingbats list and of Ghostscript's own (not kept). Lines
// of "%L#" map a name to a sequence.
func readDecoding(path string) (agl, zapf map[string]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	agl, zapf = map[string]string{}, map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		line = strings.TrimPrefix(line, "%L#")
		if !strings.HasPrefix(line, "16#") && !(len(line) > 4 && isHex(line[:4])) {
			continue
		}
		line = strings.TrimPrefix(line, "16#")
		cols := strings.Split(line, "  ")
		var cps []string
		for _, h := range strings.Split(cols[0], "_") {
			v, err := strconv.ParseUint(h, 16, 32)
			if err != nil {
				return nil, nil, fmt.Errorf("%q: %w", line, err)
			}
			cps = append(cps, fmt.Sprintf("%04X", v))
		}
		text := strings.Join(cps, " ")
		for i, c := range cols[1:] {
			if i > 2 {
				break
			}
			// A tab starts Ghostscript's own column.
			c, _, _ = strings.Cut(c, "\t")
			for _, n := range strings.Fields(c) {
				m := agl
				if i == 2 {
					m = zapf
				}
				if _, ok := m[n]; !ok {
					m[n] = text
				}
			}
		}
	}
	return agl, zapf, sc.Err()
}

func isHex(s string) bool {
	_, err := strconv.ParseUint(s, 16, 32)
	return err == nil
}

// encoding has Ghostscript print the 256 glyph names of an encoding
// ("-" for .notdef).
func encoding(name string) ([]string, error) {
	ps := fmt.Sprintf("/%s findencoding { dup /.notdef eq { pop (-) } if = } forall quit", name)
	out, err := exec.Command("gs", "-q", "-dNODISPLAY", "-dNOSAFER", "-c", ps).Output()
	if err != nil {
		return nil, fmt.Errorf("gs %s: %w", name, err)
	}
	names := strings.Fields(string(out))
	if len(names) != 256 {
		return nil, fmt.Errorf("gs %s: %d names", name, len(names))
	}
	return names, nil
}
