// Package opstest reads botd's /metrics in tests the way Prometheus does:
// through the Prometheus text-format parser (expfmt), never by matching
// lines.
package opstest

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are the metric families of one scrape, by name.
type Families map[string]*dto.MetricFamily

// Parse parses the Prometheus text format.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// Scrape GETs url (a /metrics address), checks that it answers 200 in the
// text format, and parses it.
func Scrape(t testing.TB, url string) Families {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: status %d", url, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape %s: Content-Type %q, want the text format", url, ct)
	}
	fs, err := Parse(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: not the Prometheus text format: %v", url, err)
	}
	return fs
}

// Value is the value of the counter or gauge name whose labels include
// every pair of labels ("network", "telegram", ...), summed over the
// series that match; found is false when no series matches.
func (fs Families) Value(name string, labels ...string) (v float64, found bool) {
	if len(labels)%2 != 0 {
		panic("opstest: labels come in name, value pairs")
	}
	f, ok := fs[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		found = true
		switch {
		case m.GetCounter() != nil:
			v += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			v += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			v += m.GetUntyped().GetValue()
		case m.GetHistogram() != nil:
			v += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return v, found
}

func hasLabels(m *dto.Metric, want []string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for i := 0; i < len(want); i += 2 {
		if v, ok := have[want[i]]; !ok || v != want[i+1] {
			return false
		}
	}
	return true
}

// Names lists the families, sorted: for failure messages.
func (fs Families) Names() string {
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}
