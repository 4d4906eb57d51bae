package links_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/links"
	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/webfetch"
	"github.com/botd-dev/botd/websearch"
	"github.com/botd-dev/botd/websearch/searchtest"
)

// webSite serves pages on loopback and counts what reached it: every
// request, and the conditional ones.
type webSite struct {
	srv *httptest.Server

	mu          sync.Mutex
	hits        map[string]int
	conditional int
}

func newWebSite(t *testing.T) *webSite {
	s := &webSite{hits: map[string]int{}}
	photo := mediatest.PNG(t, 16, 16)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		if r.Header.Get("If-None-Match") != "" {
			s.conditional++
		}
		s.mu.Unlock()
		switch r.URL.Path {
		case "/article":
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Cache-Control", "max-age=60")
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<html><head><title>Rota</title></head><body><article><p>Ann on Monday, Bob on Tuesday.</p></article></body></html>")
		case "/photo.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(photo)
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, strings.Repeat("x", 2*mediatest.MaxDownload))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *webSite) counts(path string) (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path], s.conditional
}

// withLinks gives the rig's store to the service (the rig's store exists
// only once the rig does).
func withLinks(r *mediatest.Rig, search websearch.Searcher, perHour int) {
	r.T.Helper()
	r.Stop()
	cfg := webfetch.DefaultConfig()
	cfg.AllowPrivate, cfg.MaxBytes, cfg.PerGroupPerHour = []string{"127.0.0.1"}, r.Max, perHour
	f, err := webfetch.New(cfg, webfetch.Options{})
	if err != nil {
		r.T.Fatal(err)
	}
	r.Web = func(po *links.PagesOptions, o *links.Options) {
		po.Web, po.Store = f, r.Store
		o.Search, o.SearchPrice, o.Bill = search, 0.01, r.Store
	}
	r.Start()
}

func fetchURL(t *testing.T, r *mediatest.Rig, folder, url string) (tools.FetchURLResult, error) {
	t.Helper()
	var res tools.FetchURLResult
	err := mediatest.Call(t, r.Client(folder), tools.FetchURL, tools.FetchURLArgs{URL: url}, &res)
	return res, err
}

// A page is fetched once, reused while its max-age lasts, revalidated
// with its ETag after (a 304 keeps the copy), and each group has its own
// link ref: another group's fetch is its own, and cannot reach the first
// group's ref.
func TestFetchURLCachedRevalidatedPerGroup(t *testing.T) {
	site := newWebSite(t)
	r := mediatest.New(t)
	withLinks(r, nil, 60)
	url := site.srv.URL + "/article"

	first, err := fetchURL(t, r, "family", url+"#top")
	if err != nil {
		t.Fatal(err)
	}
	if first.URL != url || first.MIME != "text/html" || first.Kind != "Document" || !strings.HasPrefix(first.Ref, "ln_") ||
		!strings.HasPrefix(first.Path, "media/"+first.Ref) || first.ContentType != "text/html; charset=utf-8" || first.Cached {
		t.Fatalf("first fetch = %+v", first)
	}
	if first.Ref != mediaregistry.LinkID("telegram:-100", url) {
		t.Errorf("ref %s is not the group's link id of the address", first.Ref)
	}
	again, err := fetchURL(t, r, "family", strings.Replace(url, "http://", "HTTP://", 1))
	if err != nil {
		t.Fatal(err)
	}
	if hits, _ := site.counts("/article"); hits != 1 || !again.Cached || again.Ref != first.Ref {
		t.Fatalf("a fresh page was asked for again: %d GETs, cached=%v", hits, again.Cached)
	}

	r.Clock.Advance(2 * time.Minute) // past max-age=60
	if _, err := fetchURL(t, r, "family", url); err != nil {
		t.Fatal(err)
	}
	if hits, cond := site.counts("/article"); hits != 2 || cond != 1 {
		t.Fatalf("a stale page: %d GETs, %d conditional; want a second, conditional one", hits, cond)
	}

	other, err := fetchURL(t, r, "work", url)
	if err != nil {
		t.Fatal(err)
	}
	if hits, _ := site.counts("/article"); other.Ref == first.Ref || hits != 3 {
		t.Errorf("another group shares the first one's ref (%s) or its fetch (%d GETs)", other.Ref, hits)
	}
	var res tools.FetchMediaResult
	mediatest.WantCode(t, mediatest.Call(t, r.Client("work"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: first.Ref}, &res), tools.CodeNotFound)

	reqs, err := r.Store.RecentWebRequests(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for i := len(reqs) - 1; i >= 0; i-- {
		outcomes = append(outcomes, reqs[i].Folder+":"+reqs[i].Outcome)
		if reqs[i].Host != "127.0.0.1" || reqs[i].Tool != "fetch_url" {
			t.Errorf("recorded %+v", reqs[i])
		}
	}
	if got := strings.Join(outcomes, " "); got != "family:fetched family:cached family:not_modified work:fetched" {
		t.Errorf("the record says %q", got)
	}
}

// What fetch_url refuses, and how: the guard's refusals before any
// request, a group past its hour, a page over the cap, a server's error;
// an image link becomes an Image ref.
func TestFetchURLRefusalsAndKinds(t *testing.T) {
	site := newWebSite(t)
	r := mediatest.New(t)
	withLinks(r, nil, 3)
	for _, u := range []string{"http://169.254.169.254/latest/meta-data", "http://localhost:8080/", "http://10.0.0.1/", "http://0x7f.1/",
		"http://user:pw@" + strings.TrimPrefix(site.srv.URL, "http://") + "/article"} {
		_, err := fetchURL(t, r, "family", u)
		mediatest.WantCode(t, err, tools.CodeForbidden)
	}
	for _, u := range []string{"ftp://example.com/", "javascript:alert(1)", ""} {
		_, err := fetchURL(t, r, "family", u)
		mediatest.WantCode(t, err, tools.CodeBadRequest)
	}
	if hits, _ := site.counts("/article"); hits != 0 {
		t.Fatalf("a refused address reached the server %d times", hits)
	}

	img, err := fetchURL(t, r, "family", site.srv.URL+"/photo.png")
	if err != nil {
		t.Fatal(err)
	}
	if img.Kind != "Image" || img.MIME != "image/png" {
		t.Errorf("an image link is %s %s", img.Kind, img.MIME)
	}
	_, err = fetchURL(t, r, "family", site.srv.URL+"/big")
	mediatest.WantCode(t, err, tools.CodeTooLarge)
	_, err = fetchURL(t, r, "family", site.srv.URL+"/missing")
	mediatest.WantCode(t, err, tools.CodeDownloadFailed)
	if !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 says %q", err)
	}
	// Three network fetches this hour: the fourth is refused, a cached
	// page is still served.
	_, err = fetchURL(t, r, "family", site.srv.URL+"/article")
	mediatest.WantCode(t, err, tools.CodeRateLimited)
	if _, err := fetchURL(t, r, "family", site.srv.URL+"/photo.png"); err != nil {
		t.Errorf("a cached page is refused past the hour's share: %v", err)
	}
	if _, err := fetchURL(t, r, "work", site.srv.URL+"/article"); err != nil {
		t.Errorf("another group is limited by the first one's share: %v", err)
	}
}

// web_search reaches the provider, answers its results and puts each
// query on the group's bill.
func TestWebSearchBilled(t *testing.T) {
	fake := searchtest.NewSearXNG(t, websearch.Result{Title: "Pharmacy hours", URL: "https://pharmacy.example/", Snippet: "Open until 6 pm."})
	s, err := websearch.New(fake.Config(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := mediatest.New(t)
	withLinks(r, s, 60)
	var res tools.WebSearchResult
	if err := mediatest.Call(t, r.Client("family"), tools.WebSearch, tools.WebSearchArgs{Query: "pharmacy hours", Count: 3}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Provider != "searxng" || len(res.Results) != 1 || res.Results[0].URL != "https://pharmacy.example/" {
		t.Fatalf("results %+v", res)
	}
	if q := fake.Queries(); len(q) != 1 || q[0] != "pharmacy hours" {
		t.Errorf("the provider got %q", q)
	}
	rows, err := r.Store.Usage(context.Background(), "family", time.Time{}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Searches != 1 || rows[0].CostMicrocents != 1_000_000 {
		t.Errorf("usage %+v, want one search at $0.01", rows)
	}
	mediatest.WantCode(t, mediatest.Call(t, r.Client("family"), tools.WebSearch, tools.WebSearchArgs{Query: "  "}, &res), tools.CodeBadRequest)
	fake.Fail(http.StatusTooManyRequests)
	err = mediatest.Call(t, r.Client("family"), tools.WebSearch, tools.WebSearchArgs{Query: "again"}, &res)
	mediatest.WantCode(t, err, tools.CodeDownloadFailed)
	if !strings.Contains(err.Error(), "429") {
		t.Errorf("a provider's 429 says %q", err)
	}
}

// BenchmarkFetchURLCached is a fetch_url of a page the cache holds fresh
// (the built-in agent's path, in process): lookups, the group's copy,
// no request to the server.
func BenchmarkFetchURLCached(b *testing.B) {
	page := strings.Repeat("<p>Ann on Monday, Bob on Tuesday.</p>\n", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, page)
	}))
	b.Cleanup(srv.Close)
	r := mediatest.New(b)
	withLinks(r, nil, 100000)
	g, _ := r.Set.ByFolder("family")
	ctx := context.Background()
	if _, err := r.Links.FetchURL(ctx, g, tools.FetchURLArgs{URL: srv.URL + "/rota"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Links.FetchURL(ctx, g, tools.FetchURLArgs{URL: srv.URL + "/rota"})
		if err != nil || !res.Cached {
			b.Fatalf("%v cached=%v", err, res != nil && res.Cached)
		}
	}
}

// BenchmarkFetchURL1MB fetches a new 1 MB page from loopback each time:
// the guarded GET, the cache (hash, sniff), the group's copy.
func BenchmarkFetchURL1MB(b *testing.B) {
	page := strings.Repeat("<p>"+strings.Repeat("word ", 200)+"</p>\n", (1<<20)/1008)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, page)
	}))
	b.Cleanup(srv.Close)
	r := mediatest.NewMax(b, 4<<20)
	withLinks(r, nil, 100000)
	g, _ := r.Set.ByFolder("family")
	ctx := context.Background()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		if _, err := r.Links.FetchURL(ctx, g, tools.FetchURLArgs{URL: fmt.Sprintf("%s/page?n=%d", srv.URL, n)}); err != nil {
			b.Fatal(err)
		}
	}
}

// A page whose cached bytes were swept while its record still says it is
// fresh comes back through the links' Pages when its ref is fetched: the
// media service asks them (media.Options.Pages) to GET it again. With
// fetching turned off since, the fetch is refused and says why.
func TestSweptPageIsFetchedAgain(t *testing.T) {
	site := newWebSite(t)
	r := mediatest.New(t)
	withLinks(r, nil, 60)
	ctx := context.Background()
	first, err := fetchURL(t, r, "family", site.srv.URL+"/article")
	if err != nil {
		t.Fatal(err)
	}
	sweep := func() {
		t.Helper()
		if err := r.Cache.Forget(ctx, first.SHA256); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(r.Cache.Path(first.SHA256)); err != nil {
			t.Fatal(err)
		}
	}
	sweep()
	var res tools.FetchMediaResult
	if err := mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: first.Ref}, &res); err != nil {
		t.Fatal(err)
	}
	if hits, _ := site.counts("/article"); hits != 2 || res.Cached || res.SHA256 != first.SHA256 {
		t.Fatalf("after the sweep: %d GETs, result %+v; want the page fetched again, the same bytes", hits, res)
	}

	sweep()
	r.Stop()
	r.Web = nil // internet.fetch.enabled: false
	r.Start()
	err = mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: first.Ref}, nil)
	mediatest.WantCode(t, err, tools.CodeForbidden)
	if !strings.Contains(err.Error(), "internet.fetch.enabled") {
		t.Errorf("the refusal does not say what is off: %v", err)
	}
	if hits, _ := site.counts("/article"); hits != 2 {
		t.Errorf("fetched with fetching off: %d GETs", hits)
	}
}
