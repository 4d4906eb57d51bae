package doctext

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// TestHostileOffice: number formats, lists and embedded objects built
// to cost a reader time or memory stay inside the document's budgets.
func TestHostileOffice(t *testing.T) {
	t.Run("crafted number formats on many cells", func(t *testing.T) {
		// Every custom format a workbook may hold, each as long as
		// allowed and as awkward as possible, on 60,000 cells.
		codes := []string{
			strings.Repeat("0", 30) + "." + strings.Repeat("0", 30),
			"# " + strings.Repeat("?", 30) + "/" + strings.Repeat("?", 30),
			"[h]:mm:ss.000",
			strings.Repeat(`"x"`, 85),
			"#,##0" + strings.Repeat(",", 200),
			"0.0E+" + strings.Repeat("0", 240),
			strings.Repeat("[<1][>2]", 31),
			strings.Repeat("yyyy mmmm dddd hh:mm:ss AM/PM ", 8),
			strings.Repeat(";", 254),
			`"` + strings.Repeat(`\`, 253),
		}
		numFmts := map[int]string{}
		var xfs []int
		for i := range maxNumFmts {
			numFmts[164+i] = codes[i%len(codes)]
			xfs = append(xfs, 164+i)
		}
		var rows strings.Builder
		for r := range 600 {
			fmt.Fprintf(&rows, `<row r="%d">`, r+1)
			for c := range 100 {
				fmt.Fprintf(&rows, `<c s="%d"><v>%g</v></c>`, (r*100+c)%len(xfs), []float64{1e300, -1e-300, 45292.123456, 0.3333333333333333}[c%4])
			}
			rows.WriteString(`</row>`)
		}
		data := xlsxWith(false, numFmts, xfs, rows.String())
		start := time.Now()
		res, err := extract(t, data, "formats.xlsx", "", Options{})
		if err != nil {
			t.Fatal(err)
		}
		// A budget in work, not time: the whole sheet is formatted, and
		// only the first part of its text kept.
		if res.More == "" || !strings.Contains(res.Text, "|") {
			t.Errorf("want the first part of the sheet: %+v", res.More)
		}
		t.Logf("%d cells through %d crafted formats in %v", 60000, len(numFmts), time.Since(start))
	})

	t.Run("an embedded object past its bound", func(t *testing.T) {
		// 40 MiB that start like a zip, deflated in the document to 40 KB.
		huge := append([]byte("PK\x03\x04"), make([]byte, 40<<20)...)
		data := wordDoc(doctexttest.P("", "before")+oleObject("rIdBig")+doctexttest.P("", "after"), "", map[string][]byte{"rIdBig": huge})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := extract(t, data, "big.docx", "", Options{})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if got := body(t, res); !strings.Contains(got, "before") || !strings.Contains(got, "after") || !strings.Contains(got, "too large to read") {
			t.Errorf("got %q", got)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*maxEmbedBytes {
			t.Errorf("allocated %d MiB", alloc>>20)
		}
	})

	t.Run("objects embedded in objects", func(t *testing.T) {
		// Five documents, each inside the one before.
		data := wordDoc(doctexttest.P("", "level 5"), "", nil)
		for i := 4; i >= 0; i-- {
			data = wordDoc(doctexttest.P("", fmt.Sprintf("level %d", i))+oleObject("rIdIn"), "", map[string][]byte{"rIdIn": data})
		}
		res, err := extract(t, data, "nested.docx", "", Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := body(t, res)
		for i := 0; i <= 5; i++ {
			if has := strings.Contains(got, fmt.Sprintf("level %d", i)); has != (i <= maxEmbedDepth) {
				t.Errorf("level %d shown: %v\n%s", i, has, got)
			}
		}
	})

	t.Run("one object referred to a thousand times", func(t *testing.T) {
		sheet := doctexttest.XLSX(doctexttest.Sheet{Name: "S", Rows: [][]string{{"once"}}})
		data := wordDoc(strings.Repeat(oleObject("rIdX"), 1000), "", map[string][]byte{"rIdX": sheet})
		res, err := extract(t, data, "many.docx", "", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(body(t, res), "| once |"); n != 1 {
			t.Errorf("read %d times", n)
		}
	})

	t.Run("a list counter driven far", func(t *testing.T) {
		numbering := `<w:abstractNum w:abstractNumId="0">` + lvl("0", "upperRoman", "%1.", "1048575") + lvl("1", "lowerLetter", "%1.%2.%1.%2.%1.%2.%1.%2.%1.%2.%1.%2.%1.%2.%1.%2.%1.%2.%1.%2.", "1000000") +
			`</w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>`
		var b strings.Builder
		for range 5000 {
			b.WriteString(listP("1", "1", "x"))
		}
		res, err := extract(t, wordDoc(listP("1", "0", "top")+b.String(), numbering, nil), "count.docx", "", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := body(t, res); !strings.HasPrefix(got, "1048575. top\n1048575.1000000.") {
			t.Errorf("got %.200q", got)
		}
	})
}
