package doctext

import (
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

const (
	nsW   = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:o="urn:schemas-microsoft-com:office:office" xmlns:v="urn:schemas-microsoft-com:vml"`
	nsP   = `xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	relNS = `xmlns="http://schemas.openxmlformats.org/package/2006/relationships"`
)

// wordDoc is a DOCX with a numbering part and embedded files
// (relationship id → file in word/embeddings).
func wordDoc(body, numbering string, embedded map[string][]byte) []byte {
	files := []doctexttest.File{
		{Name: "word/document.xml", Body: `<w:document ` + nsW + `><w:body>` + body + `</w:body></w:document>`},
	}
	if numbering != "" {
		files = append(files, doctexttest.File{Name: "word/numbering.xml", Body: `<w:numbering ` + nsW + `>` + numbering + `</w:numbering>`})
	}
	rels := `<Relationships ` + relNS + `>`
	for id, b := range embedded {
		rels += `<Relationship Id="` + id + `" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/package" Target="embeddings/` + id + `.bin"/>`
		files = append(files, doctexttest.File{Name: "word/embeddings/" + id + ".bin", Body: string(b)})
	}
	files = append(files, doctexttest.File{Name: "word/_rels/document.xml.rels", Body: rels + `</Relationships>`})
	return doctexttest.Zip(files...)
}

// listP is a Word paragraph in list numID at level ilvl.
func listP(numID, ilvl, text string) string {
	return `<w:p><w:pPr><w:numPr><w:ilvl w:val="` + ilvl + `"/><w:numId w:val="` + numID + `"/></w:numPr></w:pPr>` +
		`<w:r><w:t>` + doctexttest.X(text) + `</w:t></w:r></w:p>`
}

func lvl(i, fmt, text, start string) string {
	return `<w:lvl w:ilvl="` + i + `"><w:start w:val="` + start + `"/><w:numFmt w:val="` + fmt + `"/><w:lvlText w:val="` + text + `"/></w:lvl>`
}

// oleObject is how Word places an embedded file in a paragraph.
func oleObject(rid string) string {
	return `<w:p><w:r><w:object><v:shape id="s1"/><o:OLEObject Type="Embed" ProgID="Excel.Sheet.12" ShapeID="s1" r:id="` + rid + `"/></w:object></w:r></w:p>`
}

func TestDOCXListsAndEmbedded(t *testing.T) {
	numbering := `<w:abstractNum w:abstractNumId="0">` + lvl("0", "decimal", "%1.", "1") + lvl("1", "lowerLetter", "%2)", "1") +
		lvl("2", "lowerRoman", "%1.%2.%3", "1") + `</w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="1">` + lvl("0", "bullet", "", "1") + `</w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="2">` + lvl("0", "upperRoman", "Chapter %1:", "4") + `</w:abstractNum>` +
		`<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>` +
		`<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>` +
		`<w:num w:numId="3"><w:abstractNumId w:val="0"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>` +
		`<w:num w:numId="4"><w:abstractNumId w:val="2"/></w:num>`
	sheet := doctexttest.XLSX(doctexttest.Sheet{Name: "Costs", Rows: [][]string{{"rent", "1200"}}})
	doc := doctexttest.P("", "Steps:") +
		listP("1", "0", "Open") + listP("1", "1", "first sub") + listP("1", "1", "second sub") + listP("1", "2", "deep") +
		listP("1", "0", "Close") +
		listP("2", "0", "a bullet") +
		listP("1", "0", "Continues") + // the same list, after a bullet
		listP("3", "0", "Restarted") + listP("3", "0", "Then") +
		listP("4", "0", "Roman from four") +
		listP("9", "0", "A list numbering.xml lacks") +
		oleObject("rIdXl") + doctexttest.P("", "After the table.")
	res, err := extract(t, wordDoc(doc, numbering, map[string][]byte{"rIdXl": sheet}), "steps.docx", "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Steps:\n1. Open\na) first sub\nb) second sub\n1.b.i deep\n2. Close\n• a bullet\n3. Continues\n1. Restarted\n2. Then\n" +
		"Chapter IV: Roman from four\n• A list numbering.xml lacks\n\n" +
		"[Embedded spreadsheet]\n## Sheet: Costs\n| rent | 1200 |\n\n[End of the embedded spreadsheet]\n\nAfter the table."
	if got := body(t, res); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// deck is a PPTX of slides given as their spTree contents, with files
// embedded in the first slide (relationship id → bytes).
func deck(embedded map[string][]byte, slides ...string) []byte {
	files := []doctexttest.File{}
	pres := `<p:presentation ` + nsP + `><p:sldIdLst>`
	rels := `<Relationships ` + relNS + `>`
	for i, s := range slides {
		n := string(rune('1' + i))
		pres += `<p:sldId id="25` + n + `" r:id="rId` + n + `"/>`
		rels += `<Relationship Id="rId` + n + `" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide` + n + `.xml"/>`
		files = append(files, doctexttest.File{Name: "ppt/slides/slide" + n + ".xml",
			Body: `<p:sld ` + nsP + `><p:cSld><p:spTree>` + s + `</p:spTree></p:cSld></p:sld>`})
	}
	srels := `<Relationships ` + relNS + `>`
	for id, b := range embedded {
		srels += `<Relationship Id="` + id + `" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/package" Target="../embeddings/` + id + `.xlsx"/>`
		files = append(files, doctexttest.File{Name: "ppt/embeddings/" + id + ".xlsx", Body: string(b), Store: true})
	}
	files = append(files,
		doctexttest.File{Name: "ppt/slides/_rels/slide1.xml.rels", Body: srels + `</Relationships>`},
		doctexttest.File{Name: "ppt/presentation.xml", Body: pres + `</p:sldIdLst></p:presentation>`},
		doctexttest.File{Name: "ppt/_rels/presentation.xml.rels", Body: rels + `</Relationships>`})
	return doctexttest.Zip(files...)
}

// para is a slide paragraph with a:pPr contents ppr at level lvl.
func para(lvl, ppr, text string) string {
	return `<a:p><a:pPr lvl="` + lvl + `">` + ppr + `</a:pPr><a:r><a:t>` + doctexttest.X(text) + `</a:t></a:r></a:p>`
}

func shape(paras ...string) string {
	return `<p:sp><p:txBody><a:bodyPr/>` + strings.Join(paras, "") + `</p:txBody></p:sp>`
}

// oleFrame is an embedded object as PowerPoint writes it: the same
// object in both branches of an AlternateContent.
func oleFrame(rid string) string {
	obj := `<p:oleObj name="Worksheet" r:id="` + rid + `" progId="Excel.Sheet.12"><p:embed/></p:oleObj>`
	return `<p:graphicFrame><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/presentationml/2006/ole">` +
		`<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><mc:Choice Requires="v">` + obj +
		`</mc:Choice><mc:Fallback>` + obj + `</mc:Fallback></mc:AlternateContent></a:graphicData></a:graphic></p:graphicFrame>`
}

func TestPPTXListsAndEmbedded(t *testing.T) {
	num := `<a:buAutoNum type="arabicPeriod"/>`
	sheet := doctexttest.XLSX(doctexttest.Sheet{Name: "Q1", Rows: [][]string{{"region", "sales"}, {"north", "12"}}})
	slide1 := shape(
		para("0", "", "Agenda"),
		para("0", num, "Welcome"),
		para("1", `<a:buAutoNum type="alphaLcParenR"/>`, "who we are"),
		para("1", `<a:buAutoNum type="alphaLcParenR"/>`, "what we do"),
		`<a:p><a:pPr>`+num+`</a:pPr></a:p>`, // empty: neither shown nor counted
		para("0", num, "Results"),
		para("0", `<a:buChar char="§"/>`, "a bullet"),
		para("0", num, "Numbering starts again"),
		para("0", `<a:buAutoNum type="romanUcParenBoth" startAt="3"/>`, "Third"),
		para("0", `<a:buNone/>`, "plain"),
	) + oleFrame("rIdXl") + shape(para("0", num, "Another box counts afresh"))
	res, err := extract(t, deck(map[string][]byte{"rIdXl": sheet}, slide1, shape(para("0", "", "Thanks"))), "d.pptx", "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "--- slide 1 ---\nAgenda\n1. Welcome\na) who we are\nb) what we do\n2. Results\n• a bullet\n1. Numbering starts again\n(III) Third\nplain\n\n" +
		"[Embedded spreadsheet]\n## Sheet: Q1\n| region | sales |\n| north | 12 |\n\n[End of the embedded spreadsheet]\n\n1. Another box counts afresh\n\n" +
		"--- slide 2 ---\nThanks"
	if got := body(t, res); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestPPTXEmpty(t *testing.T) {
	res, err := extract(t, deck(nil), "empty.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation", Options{})
	if err != nil {
		t.Fatalf("an empty deck is not damaged: %v", err)
	}
	if res.Pages != 0 || res.Unit != "slide" || res.More != "" || !strings.Contains(res.Text, "The presentation has no slides.") ||
		!strings.HasPrefix(res.Text, `<document name="empty.pptx"`) {
		t.Errorf("got %+v", res)
	}
}
