package pdf

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

func pages(n int) []doctexttest.Page {
	ps := make([]doctexttest.Page, n)
	for i := range ps {
		ps[i] = doctexttest.Page{Lines: []string{fmt.Sprintf("Page %d first line (with parens) \\ café", i+1), "second line"}}
	}
	return ps
}

func TestPageText(t *testing.T) {
	cases := []struct {
		name string
		o    doctexttest.PDFOptions
		ps   []doctexttest.Page
		want []string
	}{
		{"table", doctexttest.PDFOptions{}, pages(3), []string{"Page 1 first line (with parens) \\ café\nsecond line", "Page 2 first", "Page 3 first"}},
		{"streams", doctexttest.PDFOptions{ObjStreams: true, Compress: true}, pages(3), []string{"Page 1 first line (with parens) \\ café\nsecond line", "Page 2", "Page 3"}},
		{"unicode", doctexttest.PDFOptions{Unicode: true, Compress: true}, []doctexttest.Page{{Lines: []string{"Привет мир", "日本語 😀"}}}, []string{"Привет мир\n日本語 😀"}},
		{"kerning", doctexttest.PDFOptions{Kerning: true}, []doctexttest.Page{{Lines: []string{"words set apart by gaps", "next"}}}, []string{"words set apart by gaps\nnext"}},
		{"image", doctexttest.PDFOptions{}, []doctexttest.Page{{Image: true}}, []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := doctexttest.PDF(tc.ps, tc.o)
			d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if d.NumPages() != len(tc.ps) {
				t.Fatalf("pages %d, want %d", d.NumPages(), len(tc.ps))
			}
			for i, w := range tc.want {
				info, err := d.PageText(context.Background(), i+1, 10000)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(info.Text, w) || (w == "" && info.Text != "") {
					t.Errorf("page %d: %q, want prefix %q", i+1, info.Text, w)
				}
			}
		})
	}
}
