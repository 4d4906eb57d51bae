package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// The corpus: PDFs that Debian packages install (manuals written by
// TeX, DBLaTeX with xdvipdfmx and others, in English, French, Japanese and
// Chinese; scripts/testdeps.sh installs them), variants the test makes of
// them (encrypted and with object streams by qpdf, their cross-reference
// tables broken), and a document in Arabic, Hebrew and Persian that
// LibreOffice converts. Each is read whole and its words compared with
// what pdftotext reads.

// corpusGlobs are where the packages put their PDFs.
var corpusGlobs = []string{
	"/usr/share/debian-reference/debian-reference.*.pdf", // debian-reference-{en,fr,ja,zh-cn,zh-tw}
	"/usr/share/doc/libtasn1-doc/*.pdf",                  // libtasn1-doc
	"/usr/share/doc/shared-mime-info/*.pdf",              // shared-mime-info
}

type corpusFile struct {
	name     string
	path     string
	ref      string // the file pdftotext reads for the words to find (the original of a variant)
	features []string
}

type corpusResult struct {
	file            corpusFile
	script          string
	recall          float64
	err             error
	refErr          bool // pdftotext could not read the original
	refCannot       bool // pdftotext cannot read this very file
	producer        string
	ours, reference time.Duration
	pages           int
	reordered       int // pages read out of drawing order
}

func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus: skipped in -short mode")
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("corpus: pdftotext is not on PATH (poppler-utils; scripts/testdeps.sh installs it)")
	}
	var originals []string
	for _, g := range corpusGlobs {
		m, _ := filepath.Glob(g)
		originals = append(originals, m...)
	}
	if extra := os.Getenv("BOTD_PDF_CORPUS"); extra != "" {
		m, _ := filepath.Glob(filepath.Join(extra, "*.pdf"))
		originals = append(originals, m...)
	}
	if len(originals) == 0 {
		t.Skip("corpus: none of the Debian packages' PDFs is installed (scripts/testdeps.sh installs debian-reference-*, libtasn1-doc)")
	}
	sort.Strings(originals)
	dir := t.TempDir()
	var files []corpusFile
	for _, p := range originals {
		files = append(files, corpusFile{name: filepath.Base(p), path: p, ref: p})
	}
	files = append(files, variants(t, dir, originals)...)
	files = append(files, withoutToUnicode(t, dir, originals)...)
	if f, ok := rtlDocument(t, dir); ok {
		files = append(files, f)
	}
	if f, ok := symbolDocument(t, dir); ok {
		files = append(files, f)
	}
	if f, ok := type3Document(t, dir); ok {
		files = append(files, f)
	}
	var results []corpusResult
	for _, f := range files {
		r := readCorpusFile(t, f)
		results = append(results, r)
		status := "ok"
		if r.err != nil {
			status = r.err.Error()
		}
		t.Logf("%-44s %-5s %4d pages (%d reordered) recall %.3f  %6.0f ms (pdftotext %5.0f ms) %v %s", f.name, r.script, r.pages,
			r.reordered, r.recall, ms(r.ours), ms(r.reference), r.file.features, status)
	}
	report(t, results)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// variants makes, from the originals, the files that show the features
// real files rarely have: broken cross-reference tables (objects moved
// by bytes added after the header; the table and trailer cut off), and
// with qpdf, encryption with an empty user password (every revision) and
// object streams.
func variants(t *testing.T, dir string, originals []string) []corpusFile {
	t.Helper()
	var out []corpusFile
	pick := func(substr string) string {
		for _, p := range originals {
			if strings.Contains(p, substr) {
				return p
			}
		}
		return ""
	}
	bases := slices.DeleteFunc([]string{pick("libtasn1"), pick(".ja."), pick(".en.")}, func(s string) bool { return s == "" })
	for _, p := range bases {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, breakTable(t, dir, strings.TrimSuffix(filepath.Base(p), ".pdf"), p, data)...)
	}
	qpdf, err := exec.LookPath("qpdf")
	if err != nil {
		t.Log("corpus: qpdf is not on PATH: no encrypted or object-stream variants (scripts/testdeps.sh installs it)")
		return out
	}
	// The same breakage in files with a classic table (no object
	// streams), which pdftotext repairs too.
	for _, p := range bases[:min(2, len(bases))] {
		stem := strings.TrimSuffix(filepath.Base(p), ".pdf") + "-classic"
		classic := filepath.Join(dir, stem+".pdf")
		if b, err := exec.Command(qpdf, "--object-streams=disable", p, classic).CombinedOutput(); err != nil && !isQpdfWarning(err) {
			t.Logf("corpus: qpdf classic: %v %s", err, b)
			continue
		}
		data, err := os.ReadFile(classic)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, breakTable(t, dir, stem, p, data)...)
	}
	for _, p := range bases {
		stem := strings.TrimSuffix(filepath.Base(p), ".pdf")
		for _, v := range []struct {
			name, feature string
			args          []string
		}{
			{"rc4-40", "encrypted", []string{"--allow-weak-crypto", "--encrypt", "", "owner", "40", "--"}},
			{"rc4-128", "encrypted", []string{"--allow-weak-crypto", "--encrypt", "", "owner", "128", "--use-aes=n", "--"}},
			{"aes-128", "encrypted", []string{"--encrypt", "", "owner", "128", "--use-aes=y", "--"}},
			{"aes-256", "encrypted", []string{"--encrypt", "", "owner", "256", "--"}},
			{"aes-256-owner", "encrypted", []string{"--encrypt", "user", "", "256", "--allow-insecure", "--"}},
			{"objstm", "object streams", []string{"--object-streams=generate"}},
		} {
			path := filepath.Join(dir, stem+"-"+v.name+".pdf")
			args := append(append([]string{}, v.args...), p, path)
			if b, err := exec.Command(qpdf, args...).CombinedOutput(); err != nil && !isQpdfWarning(err) {
				t.Logf("corpus: qpdf %s: %v %s", v.name, err, b)
				continue
			}
			out = append(out, corpusFile{name: filepath.Base(path), path: path, ref: p, features: []string{v.feature}})
		}
	}
	return out
}

var toUnicodeRef = regexp.MustCompile(`/ToUnicode\s+\d+\s+\d+\s+R`)

// withoutToUnicode makes, of the Latin originals, files whose fonts have
// lost their ToUnicode maps (qpdf writes their objects out of object
// streams; the references are blanked, so every offset stays right), as
// files in the wild have them: TeX's Type1 fonts with their programs' own
// encodings (libtasn1), Type1 fonts with Differences (shared-mime-info).
// Their words are the originals'. (debian-reference's are TrueType CID
// fonts whose programs have neither cmap nor post table: without their
// maps, no reader can tell their letters; pdftotext reads their CIDs as
// characters, "'HELDQ 5HIHUHQFH".)
func withoutToUnicode(t *testing.T, dir string, originals []string) []corpusFile {
	t.Helper()
	qpdf, err := exec.LookPath("qpdf")
	if err != nil {
		return nil
	}
	var out []corpusFile
	for _, p := range originals {
		base := filepath.Base(p)
		if !strings.Contains(base, "libtasn1") && !strings.Contains(base, "shared-mime") {
			continue
		}
		path := filepath.Join(dir, strings.TrimSuffix(base, ".pdf")+"-no-tounicode.pdf")
		if b, err := exec.Command(qpdf, "--object-streams=disable", p, path).CombinedOutput(); err != nil && !isQpdfWarning(err) {
			t.Logf("corpus: qpdf: %v %s", err, b)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data = toUnicodeRef.ReplaceAllFunc(data, func(m []byte) []byte { return bytes.Repeat([]byte(" "), len(m)) })
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, corpusFile{name: filepath.Base(path), path: path, ref: p, features: []string{"no ToUnicode"}})
	}
	return out
}

// breakTable writes data (read as original orig) with its objects moved
// by a line added after the header, and with its table cut off.
func breakTable(t *testing.T, dir, stem, orig string, data []byte) []corpusFile {
	t.Helper()
	var out []corpusFile
	write := func(name string, b []byte) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, corpusFile{name: name, path: path, ref: orig, features: []string{"broken xref"}})
	}
	write(stem+"-shifted.pdf", bytes.Replace(data, []byte("\n"), []byte("\n% a line an editor added\n"), 1))
	if i := bytes.LastIndex(data, []byte("startxref")); i > 0 {
		cut := data[:i]
		if j := bytes.LastIndex(cut, []byte("\nxref")); j > 0 && len(cut)-j < 1<<20 {
			cut = cut[:j+1] // a classic table and trailer: gone too
		}
		write(stem+"-no-xref.pdf", cut)
	}
	return out
}

// isQpdfWarning: qpdf exits 3 when it wrote the file with warnings.
func isQpdfWarning(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 3
}

// rtlDocument converts a text in Arabic, Hebrew and Persian with
// LibreOffice, when it is installed.
func rtlDocument(t *testing.T, dir string) (corpusFile, bool) {
	t.Helper()
	soffice, err := exec.LookPath("soffice")
	if err != nil {
		t.Log("corpus: soffice is not on PATH: no right-to-left document")
		return corpusFile{}, false
	}
	text := strings.Repeat("مرحبا بالعالم. هذا نص عربي للاختبار، وفيه كلمات كثيرة عن الكتب والمدارس.\n"+
		"שלום עולם, זה טקסט בעברית לבדיקה של קריאת מסמכים.\n"+
		"این یک متن فارسی برای آزمایش خواندن اسناد است.\n", 3)
	src := filepath.Join(dir, "rtl-libreoffice.txt")
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, soffice, "--headless", "-env:UserInstallation=file://"+filepath.Join(dir, "lo-profile"),
		"--convert-to", "pdf", "--outdir", dir, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Logf("corpus: soffice: %v %s", err, b)
		return corpusFile{}, false
	}
	p := strings.TrimSuffix(src, ".txt") + ".pdf"
	return corpusFile{name: filepath.Base(p), path: p, ref: p}, true
}

// type3PS draws text in a Type3 font whose glyphs live in a space of 100
// units (as TeX's bitmap fonts through dvips do), one word at a time.
const type3PS = `%%!PS
/BitmapFont 8 dict begin
/FontType 3 def
/FontMatrix [0.001 0 0 0.001 0 0] def
/FontBBox [0 0 100 100] def
/Encoding StandardEncoding def
/BuildChar {
  exch begin
  Encoding exch get
  dup /m eq { pop 80 } { /i eq { 30 } { 55 } ifelse } ifelse
  dup 0 0 0 5 -1 roll 5 sub 70 setcachedevice
  5 0 moveto 20 0 rlineto 0 70 rlineto -20 0 rlineto closepath fill
  end
} def
currentdict end
/Bitmap exch definefont pop
/Bitmap findfont 100 scalefont setfont
/y 740 def
/x 72 def
/s (%s) def
/word { x y moveto dup show stringwidth pop x add 3.3 add /x exch def x 500 gt { /x 72 def /y y 14 sub def } if } def
{ s ( ) search { 3 1 roll pop /s exch def word } { word exit } ifelse } loop
showpage
`

// type3Document has Ghostscript write a Type3 font, when it is installed.
func type3Document(t *testing.T, dir string) (corpusFile, bool) {
	t.Helper()
	gs, err := exec.LookPath("gs")
	if err != nil {
		t.Log("corpus: gs is not on PATH: no Type3 document (scripts/testdeps.sh installs ghostscript)")
		return corpusFile{}, false
	}
	text := strings.Repeat("Transfer high-rate balances to a new card and pay no interest for twelve months on what you "+
		"moved, then compare the offers of several banks before you sign anything. ", 4)
	src := filepath.Join(dir, "type3-ghostscript.ps")
	if err := os.WriteFile(src, []byte(fmt.Sprintf(type3PS, strings.TrimSpace(text))), 0o644); err != nil {
		t.Fatal(err)
	}
	p := strings.TrimSuffix(src, ".ps") + ".pdf"
	if b, err := exec.Command(gs, "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=pdfwrite", "-sOutputFile="+p, src).CombinedOutput(); err != nil {
		t.Logf("corpus: gs: %v %s", err, b)
		return corpusFile{}, false
	}
	return corpusFile{name: filepath.Base(p), path: p, ref: p}, true
}

// symbolPS shows text in fonts Ghostscript writes without ToUnicode maps:
// URW's Symbol (its CFF program's glyph names: Greek), NimbusSans
// re-encoded to codes 1…12, and URW's Dingbats (names nobody knows,
// which pdftotext takes as the codes themselves).
const symbolPS = `%%!PS
/NimbusSans-Regular findfont dup length dict begin { 1 index /FID ne { def } { pop pop } ifelse } forall
/Encoding 256 array def 0 1 255 { Encoding exch /.notdef put } for
[/space /T /h /e /q /u /i /c /k /b /r /o /w /n] { } forall 13 -1 0 { exch Encoding 3 1 roll put } for
currentdict end /Recoded exch definefont pop
/y 740 def
/line { 72 y moveto show /y y 16 sub def } def
%d {
  /StandardSymbolsPS findfont 12 scalefont setfont (abgdp Symbol letters: a b g d e f q l m n x r s t) line
  /Recoded findfont 12 scalefont setfont <01020300040506070800090A0B0C0D> line
  /D050000L findfont 12 scalefont setfont (!"# $%%&) line
  y 100 lt { showpage /y 740 def } if
} repeat
showpage
`

// symbolDocument has Ghostscript write fonts without ToUnicode maps (it
// writes one for Dingbats: it is blanked).
func symbolDocument(t *testing.T, dir string) (corpusFile, bool) {
	t.Helper()
	gs, err := exec.LookPath("gs")
	if err != nil {
		return corpusFile{}, false
	}
	src := filepath.Join(dir, "no-tounicode-ghostscript.ps")
	if err := os.WriteFile(src, []byte(fmt.Sprintf(symbolPS, 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := strings.TrimSuffix(src, ".ps") + ".pdf"
	if b, err := exec.Command(gs, "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=pdfwrite", "-sOutputFile="+p, src).CombinedOutput(); err != nil {
		t.Logf("corpus: gs: %v %s", err, b)
		return corpusFile{}, false
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data = toUnicodeRef.ReplaceAllFunc(data, func(m []byte) []byte { return bytes.Repeat([]byte(" "), len(m)) })
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return corpusFile{name: filepath.Base(p), path: p, ref: p, features: []string{"no ToUnicode"}}, true
}

// corpusPages is how many pages of each file are read: all, but under the
// race detector (ten times slower) the first 25.
func corpusPages() int {
	if raceOn {
		return 25
	}
	return 1 << 30
}

func readCorpusFile(t *testing.T, f corpusFile) corpusResult {
	t.Helper()
	r := corpusResult{file: f}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	last := fmt.Sprint(min(corpusPages(), 1<<20))
	start := time.Now()
	ref, err := exec.CommandContext(ctx, "pdftotext", "-l", last, "-enc", "UTF-8", f.path, "-").Output()
	r.reference = time.Since(start)
	if err != nil {
		r.refCannot = true
		r.refErr = f.ref == f.path
	}
	if f.ref != f.path {
		// A variant's words are its original's, as pdftotext reads them.
		if ref, err = exec.CommandContext(ctx, "pdftotext", "-l", last, "-enc", "UTF-8", f.ref, "-").Output(); err != nil {
			t.Fatalf("pdftotext %s: %v", f.ref, err)
		}
	}
	r.script = scriptOf(string(ref))
	r.producer = producerOf(ctx, f.ref)
	data, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	var text strings.Builder
	d, err := Open(ctx, bytes.NewReader(data), int64(len(data)))
	if err == nil {
		r.pages = d.NumPages()
		for i := 1; i <= min(d.NumPages(), corpusPages()); i++ {
			info, err := d.PageText(ctx, i, 1<<20)
			if err != nil && ctx.Err() != nil {
				r.err = fmt.Errorf("page %d: %w", i, err)
				break
			}
			text.WriteString(info.Text)
			text.WriteString("\n")
		}
		if d.crypt != nil && !slices.Contains(f.features, "encrypted") {
			f.features = append(f.features, "encrypted")
		}
		if d.repaired && !slices.Contains(f.features, "broken xref") {
			f.features = append(f.features, "broken xref")
		}
		for _, e := range d.xref {
			if e.typ == 2 {
				if !slices.Contains(f.features, "object streams") {
					f.features = append(f.features, "object streams")
				}
				break
			}
		}
		if d.seen.cid {
			f.features = append(f.features, "CID")
		}
		if d.seen.cidByCollection {
			f.features = append(f.features, "CID without ToUnicode")
		}
		r.reordered = d.reorderedPages
		if d.seen.type3 {
			f.features = append(f.features, "Type3")
		}
	} else {
		r.err = err
	}
	r.ours = time.Since(start)
	r.file = f
	r.recall = recall(string(ref), text.String())
	return r
}

var producerName = regexp.MustCompile(`^[A-Za-z][A-Za-z ]*[A-Za-z]`)

// producerOf is the program that wrote the file (its Info's /Producer
// as pdfinfo reads it, without the version).
func producerOf(ctx context.Context, path string) string {
	out, err := exec.CommandContext(ctx, "pdfinfo", path).Output()
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if p, ok := strings.CutPrefix(line, "Producer:"); ok {
			if n := producerName.FindString(strings.TrimSpace(p)); n != "" {
				return n
			}
		}
	}
	return "unknown"
}

// bidiControls are the marks pdftotext puts around right-to-left text.
var bidiControls = strings.NewReplacer("\u200e", "", "\u200f", "", "\u202a", "", "\u202b", "", "\u202c", "", "\u202d", "",
	"\u202e", "", "\u2066", "", "\u2067", "", "\u2068", "", "\u2069", "")

// words splits text for the comparison: NFKC, lower case, punctuation off
// the ends; runs of CJK, which has no spaces, count character by character.
func words(s string) map[string]int {
	s = strings.ToLower(norm.NFKC.String(bidiControls.Replace(s)))
	out := map[string]int{}
	for _, w := range strings.Fields(s) {
		w = strings.TrimFunc(w, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) })
		var rest strings.Builder
		for _, r := range w {
			if isCJK(r) {
				out[string(r)]++
				continue
			}
			rest.WriteRune(r)
		}
		if rest.Len() > 0 {
			out[rest.String()]++
		}
	}
	return out
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// recall is the share of pdftotext's words that the reader found too.
func recall(ref, got string) float64 {
	want, have := words(ref), words(got)
	total, found := 0, 0
	for w, n := range want {
		total += n
		found += min(n, have[w])
	}
	if total == 0 {
		return 1
	}
	return float64(found) / float64(total)
}

func scriptOf(s string) string {
	var cjk, rtl, letters int
	for _, r := range s {
		switch {
		case isCJK(r):
			cjk++
		case isRTL(r):
			rtl++
		case unicode.IsLetter(r):
			letters++
		}
	}
	total := max(1, cjk+rtl+letters)
	switch {
	case cjk*10 > total:
		return "CJK"
	case rtl*10 > total:
		return "RTL"
	}
	return "Latin"
}

// corpusFloors are the mean recall the reader must keep: a little under
// what it reads now (0.998 to 1.000 in every group; see the README).
var corpusFloors = map[string]float64{"all": 0.98, "Latin": 0.98, "CJK": 0.98, "RTL": 0.9, "encrypted": 0.98,
	"broken xref": 0.98, "object streams": 0.98, "Type3": 0.95, "no ToUnicode": 0.95}

func report(t *testing.T, results []corpusResult) {
	t.Helper()
	groups := map[string][]corpusResult{}
	failed := 0
	var ratios []float64
	for _, r := range results {
		if r.refErr {
			t.Logf("not counted: pdftotext cannot read %s either (ours: %v)", r.file.name, r.err)
			continue
		}
		groups["all"] = append(groups["all"], r)
		groups[r.script] = append(groups[r.script], r)
		groups["producer: "+r.producer] = append(groups["producer: "+r.producer], r)
		for _, f := range r.file.features {
			groups[f] = append(groups[f], r)
		}
		switch {
		case r.err != nil && !r.refCannot:
			failed++
			t.Logf("FAILED where pdftotext reads it: %s: %v", r.file.name, r.err)
		case r.err == nil && r.refCannot:
			t.Logf("read where pdftotext cannot: %s", r.file.name)
		}
		if r.reference > 0 && !r.refCannot {
			ratios = append(ratios, float64(r.ours)/float64(r.reference))
		}
	}
	names := make([]string, 0, len(groups))
	for k := range groups {
		names = append(names, k)
	}
	sort.Strings(names)
	t.Logf("%-28s %5s %11s %11s %7s", "group", "files", "mean recall", "min recall", "errors")
	for _, k := range names {
		g := groups[k]
		sum, lo, errs := 0.0, 1.0, 0
		for _, r := range g {
			sum += r.recall
			lo = min(lo, r.recall)
			if r.err != nil {
				errs++
			}
		}
		mean := sum / float64(len(g))
		t.Logf("%-28s %5d %11.3f %11.3f %7d", k, len(g), mean, lo, errs)
		if floor, ok := corpusFloors[k]; ok && mean < floor {
			t.Errorf("%s: mean recall %.3f under the floor %.2f", k, mean, floor)
		}
	}
	sort.Float64s(ratios)
	if len(ratios) > 0 {
		t.Logf("time against pdftotext: median %.2f×, p95 %.2f× (reported, not asserted: timing is no verdict)",
			ratios[len(ratios)/2], ratios[min(len(ratios)-1, len(ratios)*95/100)])
	}
	if failed > 2 {
		t.Errorf("%d files that pdftotext reads answered with an error (at most 2)", failed)
	}
}
