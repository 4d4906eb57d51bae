package doctext

import (
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sources the LibreOffice corpus test writes, converts with soffice
// and reads back: nothing in it is checked in.
const (
	loCSV = "name,born,start,share,amount,paid,ratio,price,note\n" +
		"Alice,1947-01-08,12:30,12.5%,1234.5,TRUE,0.30000000000000004,$1234.50,founder\n" +
		"Bob,2001-12-31,08:05:30,3%,-17.25,FALSE,1.0999999999999996,$99.99,joined late\n" +
		"Chloé,1988-02-29,23:59,100%,1000000,TRUE,3.14159,$0.5,\"likes, commas\"\n"
	loHTML = `<html><head><meta charset="utf-8"><title>Report</title></head><body>
<h1>Quarterly report</h1>
<p>The board met on Tuesday and agreed the following steps.</p>
<ol><li>Hire two engineers</li><li>Open the Lisbon office<ol type="a"><li>sign the lease</li><li>buy furniture</li></ol></li><li>Review the budget</li></ol>
<ul><li>coffee is free</li><li>parking is not</li></ul>
<table border="1"><tr><th>item</th><th>cost</th></tr><tr><td>rent</td><td>1200</td></tr><tr><td>desks</td><td>830.25</td></tr></table>
<p>Signed, the secretary — Zoë Ångström.</p>
</body></html>`
)

// loFODP is a flat OpenDocument presentation: a numbered list, bullets.
var loFODP = `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:automatic-styles>
<text:list-style style:name="L1"><text:list-level-style-number text:level="1" style:num-format="1" style:num-suffix="."/></text:list-style>
<text:list-style style:name="L2"><text:list-level-style-bullet text:level="1" text:bullet-char="•"/></text:list-style>
</office:automatic-styles>
<office:body><office:presentation>` + loSlide("Launch plan", "L1", "Write the announcement", "Tell the customers", "Ship it") +
	loSlide("Risks", "L2", "the servers melt", "nobody comes") + `</office:presentation></office:body></office:document>`

// loDeckWords is what the presentation says, numbers and all.
const loDeckWords = "Launch plan 1. Write the announcement 2. Tell the customers 3. Ship it Risks the servers melt nobody comes"

func loSlide(title, style string, items ...string) string {
	var b strings.Builder
	b.WriteString(`<draw:page draw:name="` + title + `"><draw:frame svg:x="1cm" svg:y="1cm" svg:width="24cm" svg:height="14cm"><draw:text-box>`)
	b.WriteString(`<text:p>` + title + `</text:p><text:list text:style-name="` + style + `">`)
	for _, it := range items {
		b.WriteString(`<text:list-item><text:p>` + it + `</text:p></text:list-item>`)
	}
	b.WriteString(`</text:list></draw:text-box></draw:frame></draw:page>`)
	return b.String()
}

// TestLibreOfficeCorpus has LibreOffice make real office files from
// sources the test writes, and compares doctext's text with LibreOffice's
// own text export of the same file (its CSV export "as shown" for
// spreadsheets, its text export for documents; for the presentation,
// which LibreOffice cannot export as text, the words of the source):
// word recall, each word counted as often as it occurs.
func TestLibreOfficeCorpus(t *testing.T) {
	soffice, err := exec.LookPath("soffice")
	if err != nil {
		t.Skip("soffice (LibreOffice) is not on PATH: apt-get install libreoffice-calc-nogui libreoffice-writer-nogui libreoffice-impress-nogui")
	}
	if testing.Short() {
		t.Skip("starting LibreOffice takes seconds")
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"data.csv": loCSV, "doc.html": loHTML, "deck.fodp": loFODP} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	profile := "file://" + filepath.Join(dir, "profile")
	convert := func(to, infilter string, files ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		args := []string{"-env:UserInstallation=" + profile, "--headless", "--norestore"}
		if infilter != "" {
			args = append(args, "--infilter="+infilter)
		}
		args = append(args, "--convert-to", to, "--outdir", dir)
		for _, f := range files {
			args = append(args, filepath.Join(dir, f))
		}
		out, err := exec.CommandContext(ctx, soffice, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("soffice %v: %v\n%s", args, err, out)
		}
	}
	// Detect dates, times, percentages and currencies, as a person
	// opening the CSV would.
	csvIn := "CSV:44,34,76,1,,1033,false,true"
	convert("xlsx", csvIn, "data.csv")
	convert("ods", csvIn, "data.csv")
	convert("docx:MS Word 2007 XML", "", "doc.html")
	convert("odt:writer8", "", "doc.html")
	convert("pptx", "", "deck.fodp")
	convert("odp", "", "deck.fodp")
	// The references: LibreOffice's exports of the files it made.
	for _, f := range []string{"data.xlsx", "data.ods", "doc.docx", "doc.odt"} {
		ext := filepath.Ext(f)
		mv := strings.TrimSuffix(f, ext) + "-" + ext[1:] + ext
		if err := os.Rename(filepath.Join(dir, f), filepath.Join(dir, mv)); err != nil {
			t.Fatal(err)
		}
	}
	convert("csv:Text - txt - csv (StarCalc):44,34,76,1,,1033,false,true,true", "", "data-xlsx.xlsx", "data-ods.ods")
	convert("txt:Text (encoded):UTF8", "", "doc-docx.docx", "doc-odt.odt")

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		file, ref string
		want      float64 // the recall this reader reaches, as a floor
	}{
		{"data-xlsx.xlsx", "csv:data-xlsx.csv", 1},
		{"data-ods.ods", "csv:data-ods.csv", 1},
		{"doc-docx.docx", "txt:doc-docx.txt", 1},
		{"doc-odt.odt", "txt:doc-odt.txt", 1},
		{"deck.pptx", "", 1},
		{"deck.odp", "", 1},
	}
	for _, tc := range cases {
		var ref []string
		switch {
		case strings.HasPrefix(tc.ref, "csv:"):
			recs, err := csv.NewReader(strings.NewReader(read(tc.ref[4:]))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				for _, c := range r {
					ref = append(ref, loWords(c)...)
				}
			}
		case strings.HasPrefix(tc.ref, "txt:"):
			ref = loWords(read(tc.ref[4:]))
		default:
			ref = loWords(loDeckWords)
		}
		data := []byte(read(tc.file))
		res, err := extract(t, data, tc.file, "", Options{})
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		got := map[string]int{}
		for _, w := range loWords(body(t, res)) {
			got[w]++
		}
		found := 0
		var missing []string
		for _, w := range ref {
			if got[w] > 0 {
				got[w]--
				found++
			} else {
				missing = append(missing, w)
			}
		}
		recall := float64(found) / float64(max(len(ref), 1))
		t.Logf("%-15s recall %.3f (%d of %d words)%s", tc.file, recall, found, len(ref), loMissing(missing))
		if recall < tc.want || len(ref) < 10 {
			t.Errorf("%s: recall %.3f of %d words, want at least %.2f; missing %q", tc.file, recall, len(ref), tc.want, missing)
		}
	}
}

// loWords splits text into words, leaving out what is only markup of
// either side: table bars, heading marks, bullets.
func loWords(s string) []string {
	s = strings.ReplaceAll(s, "&amp;", "&")
	var out []string
	for _, w := range strings.Fields(strings.TrimPrefix(s, "\uFEFF")) {
		if strings.Trim(w, "|#•-") == "" {
			continue
		}
		out = append(out, w)
	}
	return out
}

func loMissing(m []string) string {
	if len(m) == 0 {
		return ""
	}
	return "; missing " + strings.Join(m, " ")
}
