package websearch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/botd-dev/botd/websearch"
	"github.com/botd-dev/botd/websearch/searchtest"
)

// richResults are MaxCount results shaped like real ones: a title, a
// two-sentence snippet with the query's words in it.
func richResults() []websearch.Result {
	rs := make([]websearch.Result, websearch.MaxCount)
	for i := range rs {
		rs[i] = websearch.Result{
			Title:     fmt.Sprintf("Main Street Pharmacy %d – opening hours & services", i),
			URL:       fmt.Sprintf("https://pharmacy%d.example/hours?ref=search", i),
			Snippet:   "The pharmacy on Main Street is open today until 6 pm. Prescriptions, vaccinations and it's open on Sundays too.",
			Published: "2 days ago",
		}
	}
	return rs
}

// BenchmarkSearch is one search of MaxCount results over loopback, the
// provider's answer decoded and every result cleaned.
func BenchmarkSearch(b *testing.B) {
	for _, f := range []struct {
		name  string
		start func(testing.TB) *searchtest.Server
	}{
		{"searxng", func(tb testing.TB) *searchtest.Server { return searchtest.NewSearXNG(tb, richResults()...) }},
		{"brave", func(tb testing.TB) *searchtest.Server { return searchtest.NewBrave(tb, "k", richResults()...) }},
	} {
		b.Run(f.name, func(b *testing.B) {
			s, err := websearch.New(f.start(b).Config(), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if rs, err := s.Search(context.Background(), "pharmacy main street open", websearch.MaxCount); err != nil || len(rs) != websearch.MaxCount {
					b.Fatalf("Search = %d results, %v", len(rs), err)
				}
			}
		})
	}
}

// BenchmarkEndlessAnswer is the cost of an answer that never ends: read up
// to MaxResponseBytes, then given up.
func BenchmarkEndlessAnswer(b *testing.B) {
	base := serveTB(b, endless(`{"results":[`))
	s, err := websearch.New(websearch.Config{Provider: "searxng", BaseURL: base}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Search(context.Background(), "q", 5); err == nil {
			b.Fatal("an endless answer was accepted")
		}
	}
}
