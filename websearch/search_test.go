package websearch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/websearch"
	"github.com/botd-dev/botd/websearch/searchtest"
)

// fake is one of the providers under the same test.
type fake struct {
	name  string
	start func(t *testing.T, results ...websearch.Result) *searchtest.Server
}

var fakes = []fake{
	{"searxng", func(t *testing.T, rs ...websearch.Result) *searchtest.Server { return searchtest.NewSearXNG(t, rs...) }},
	{"brave", func(t *testing.T, rs ...websearch.Result) *searchtest.Server {
		return searchtest.NewBrave(t, "brave-test-key-0123", rs...)
	}},
}

func newSearcher(t *testing.T, c websearch.Config) websearch.Searcher {
	t.Helper()
	s, err := websearch.New(c, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// numbered is n distinct results.
func numbered(n int) []websearch.Result {
	rs := make([]websearch.Result, n)
	for i := range rs {
		rs[i] = websearch.Result{Title: fmt.Sprintf("Result %d", i), URL: fmt.Sprintf("https://example.org/%d", i),
			Snippet: fmt.Sprintf("snippet %d", i)}
	}
	return rs
}

func TestSearchAgainstFakes(t *testing.T) {
	pharmacy := []websearch.Result{
		{Title: "Main Street Pharmacy – Opening hours", URL: "https://pharmacy.example/hours",
			Snippet: "The pharmacy on Main Street closes at 6 pm today; it's open again tomorrow at 8.", Published: "2026-03-01T00:00:00"},
		{Title: "Pharmacies near you", URL: "http://maps.example/search?q=pharmacy&near=main+street",
			Snippet: "Find a pharmacy & compare hours."},
	}
	tests := []struct {
		name    string
		results []websearch.Result
		query   string
		count   int
		want    []websearch.Result
	}{
		{"results cleaned and in order", pharmacy, "when does the pharmacy on Main Street close", 0, pharmacy},
		{"count zero asks for the default", numbered(8), "q", 0, numbered(websearch.DefaultCount)},
		{"count is honoured", numbered(8), "q", 2, numbered(2)},
		{"count above the maximum is clipped", numbered(30), "q", 100, numbered(websearch.MaxCount)},
		{"fewer results than asked", numbered(3), "q", 10, numbered(3)},
		{"no results", nil, "nothing at all", 5, []websearch.Result{}},
		{"query with URL syntax travels escaped", pharmacy[:1], "a&format=html#frag?x=1 %41 +plus", 1, pharmacy[:1]},
		{"query folded to one line", pharmacy[:1], " opening\nhours\u202e ", 1, pharmacy[:1]},
	}
	for _, f := range fakes {
		for _, tt := range tests {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				srv := f.start(t, tt.results...)
				s := newSearcher(t, srv.Config())
				got, err := s.Search(context.Background(), tt.query, tt.count)
				if err != nil {
					t.Fatalf("Search: %v", err)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("results\n got %q\nwant %q", got, tt.want)
				}
				wantQ := strings.Join(strings.Fields(strings.ReplaceAll(tt.query, "\u202e", " ")), " ")
				if qs := srv.Queries(); !slices.Equal(qs, []string{wantQ}) {
					t.Errorf("queries that reached %s = %q, want %q", f.name, qs, wantQ)
				}
				req := srv.Requests()[0]
				switch f.name {
				case "searxng":
					if req.Get("format") != "json" || len(req["format"]) != 1 {
						t.Errorf("format = %q, want one json", req["format"])
					}
				case "brave":
					want := tt.count
					if want <= 0 {
						want = websearch.DefaultCount
					}
					if want = min(want, websearch.MaxCount); req.Get("count") != fmt.Sprint(want) {
						t.Errorf("count = %q, want %d", req.Get("count"), want)
					}
				}
			})
		}
	}
}

func TestBraveSnippetMarkupRemoved(t *testing.T) {
	// The fake, like Brave, escapes the snippet and wraps the query's
	// words in <strong>: what reaches the model is the plain text.
	r := websearch.Result{Title: "Tom's <b>Pharmacy</b> &amp; Co", URL: "https://tom.example/",
		Snippet: `Tom's pharmacy: "open late" <script>x</script> & friendly`}
	srv := searchtest.NewBrave(t, "k-123", r)
	got, err := newSearcher(t, srv.Config()).Search(context.Background(), "pharmacy open late", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := websearch.Result{Title: "Tom's Pharmacy & Co", URL: r.URL, Snippet: r.Snippet}
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestProviderFailures(t *testing.T) {
	tests := []struct {
		name  string
		start func(t *testing.T) websearch.Config
		want  []string // in the error's text
	}{
		{"searxng without json in search.formats", func(t *testing.T) websearch.Config {
			srv := searchtest.NewSearXNG(t, numbered(1)...)
			srv.DisableJSON()
			return srv.Config()
		}, []string{"403 Forbidden", "json", "search.formats"}},
		{"searxng rate limited", func(t *testing.T) websearch.Config {
			srv := searchtest.NewSearXNG(t, numbered(1)...)
			srv.Fail(http.StatusTooManyRequests)
			return srv.Config()
		}, []string{"the search provider answered 429 Too Many Requests"}},
		{"searxng broken", func(t *testing.T) websearch.Config {
			srv := searchtest.NewSearXNG(t, numbered(1)...)
			srv.Fail(http.StatusInternalServerError)
			return srv.Config()
		}, []string{"the search provider answered 500 Internal Server Error"}},
		{"brave wrong key", func(t *testing.T) websearch.Config {
			c := searchtest.NewBrave(t, "the-right-key", numbered(1)...).Config()
			c.APIKey = "a-wrong-key-never-logged"
			return c
		}, []string{"refused the API key", "internet.search.api_key"}},
		{"brave rate limited", func(t *testing.T) websearch.Config {
			srv := searchtest.NewBrave(t, "k", numbered(1)...)
			srv.Fail(http.StatusTooManyRequests)
			return srv.Config()
		}, []string{"the search provider answered 429 Too Many Requests", "quota"}},
		{"brave broken", func(t *testing.T) websearch.Config {
			srv := searchtest.NewBrave(t, "k", numbered(1)...)
			srv.Fail(http.StatusBadGateway)
			return srv.Config()
		}, []string{"the search provider answered 502 Bad Gateway"}},
		{"searxng unreachable", func(t *testing.T) websearch.Config {
			return websearch.Config{Provider: "searxng", BaseURL: closedURL(t)}
		}, []string{"searxng at 127.0.0.1:", "could not be reached"}},
		{"brave unreachable", func(t *testing.T) websearch.Config {
			return websearch.Config{Provider: "brave", APIKey: "k", BaseURL: closedURL(t)}
		}, []string{"Brave Search could not be reached"}},
		{"base_url is not a SearXNG", func(t *testing.T) websearch.Config {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, "<!doctype html><h1>My router</h1>")
			}))
			t.Cleanup(srv.Close)
			return websearch.Config{Provider: "searxng", BaseURL: srv.URL}
		}, []string{"something other than the JSON expected"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.start(t)
			_, err := newSearcher(t, c).Search(context.Background(), "opening hours", 3)
			if !errors.Is(err, websearch.ErrFailed) {
				t.Fatalf("Search = %v, want ErrFailed", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if c.APIKey != "" && strings.Contains(err.Error(), c.APIKey) {
				t.Errorf("error %q shows the API key", err)
			}
			if strings.Contains(err.Error(), "opening") {
				t.Errorf("error %q repeats the query", err)
			}
		})
	}
}

// closedURL is the address of a listener that is closed: connecting to it
// is refused at once.
func closedURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

func TestBadQueryNeverSent(t *testing.T) {
	tests := []struct{ name, query string }{
		{"empty", ""},
		{"blank", " \n\t\u202e "},
		{"too long", strings.Repeat("ab ", 200)},
	}
	for _, f := range fakes {
		for _, tt := range tests {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				srv := f.start(t, numbered(3)...)
				_, err := newSearcher(t, srv.Config()).Search(context.Background(), tt.query, 3)
				if !errors.Is(err, websearch.ErrBadQuery) {
					t.Fatalf("Search = %v, want ErrBadQuery", err)
				}
				if qs := srv.Queries(); len(qs) != 0 {
					t.Errorf("a bad query reached the provider: %q", qs)
				}
			})
		}
	}
}

func TestProviderThatHangs(t *testing.T) {
	for _, provider := range []string{"searxng", "brave"} {
		t.Run(provider, func(t *testing.T) {
			got := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- struct{}{}
				<-r.Context().Done()
			}))
			t.Cleanup(srv.Close)
			s := newSearcher(t, websearch.Config{Provider: provider, BaseURL: srv.URL, APIKey: "k"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := s.Search(ctx, "anything", 3)
				done <- err
			}()
			select {
			case <-got:
			case <-time.After(testwait.HangGuard):
				t.Fatal("the request never reached the provider")
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, websearch.ErrFailed) || !errors.Is(err, context.Canceled) {
					t.Errorf("Search = %v, want ErrFailed wrapping context.Canceled", err)
				}
			case <-time.After(testwait.HangGuard):
				t.Fatal("Search did not return after its context was cancelled")
			}
		})
	}
}

func TestRedirectElsewhereKeepsTheKey(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("X-Subscription-Token"))
		mu.Unlock()
		fmt.Fprint(w, `{"web":{"results":[]}}`)
	}))
	t.Cleanup(other.Close)
	// localhost and 127.0.0.1 are the same machine but different hosts to
	// a client, as two sites are.
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.RedirectHandler(target+"/res/v1/web/search", http.StatusFound))
	t.Cleanup(srv.Close)
	_, err := newSearcher(t, websearch.Config{Provider: "brave", BaseURL: srv.URL, APIKey: "secret-key"}).
		Search(context.Background(), "q", 1)
	if !errors.Is(err, websearch.ErrFailed) || !strings.Contains(err.Error(), "302 Found") {
		t.Errorf("Search = %v, want the redirect refused as 302 Found", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) != 0 {
		t.Errorf("the redirect was followed to another host with token %q", leaked)
	}
}

func TestSearXNGBaseURLForms(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/searx/search", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"results":[{"url":"https://a.example/","title":%q,"content":""}]}`, r.URL.Query().Get("q"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, base := range []string{srv.URL + "/searx", srv.URL + "/searx/", srv.URL + "/searx/search", srv.URL + "/searx/search/"} {
		t.Run(base, func(t *testing.T) {
			got, err := newSearcher(t, websearch.Config{Provider: "searxng", BaseURL: base}).Search(context.Background(), "echo", 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Title != "echo" {
				t.Errorf("got %q", got)
			}
		})
	}
}

// serve answers every request with body, for answers no fake would give.
func serve(t *testing.T, body func(w io.Writer)) string { return serveTB(t, body) }

func serveTB(t testing.TB, body func(w io.Writer)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body(w)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
