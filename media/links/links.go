// Package links answers fetch_url and web_search. A web address becomes a
// link ref of the group's chat (mediaregistry.LinkID), GET through
// webfetch (every address checked by netguard, the body streamed into the
// media cache under the cap) only when the cached copy is stale, and is
// then served like any fetched media by the media service. Pages keeps
// the GET and what each fetch learnt, and brings back a page the cache
// lost for the media service; Service answers the tools.
package links

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/keylock"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/webfetch"
	"github.com/botd-dev/botd/websearch"
)

// PagesOptions wire Pages.
type PagesOptions struct {
	// Web fetches what fetch_url asks for (internet.fetch); nil: off.
	Web *webfetch.Fetcher
	// Store keeps what each fetch learnt (validators, freshness); nil:
	// fetching is off.
	Store    LinkStore
	Registry *mediaregistry.Registry
	Cache    *mediaregistry.Cache
	// Budget, when set, learns of every page stored.
	Budget *diskbudget.Budget
	// Meter, when set, counts the bytes of each page stored.
	Meter media.Meter
	Log   *slog.Logger
}

// Pages GETs link refs' addresses into the media cache.
type Pages struct{ o PagesOptions }

var _ media.Pages = (*Pages)(nil)

// NewPages returns the pages; it does no I/O.
func NewPages(o PagesOptions) *Pages {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Pages{o: o}
}

// off reports that fetching pages is turned off.
func (p *Pages) off() bool { return p == nil || p.o.Web == nil || p.o.Store == nil }

// Options wire a Service.
type Options struct {
	// Media serves a fetched page like any fetched media.
	Media *media.Service
	Pages *Pages
	// Search answers web_search (internet.search); nil: not configured.
	// SearchPrice is what one query costs, in USD (0: unpriced).
	Search      websearch.Searcher
	SearchPrice float64
	// Bill records what each search cost on the group's bill.
	Bill media.Bill
	Log  *slog.Logger
}

// Service answers fetch_url and web_search of every group.
type Service struct {
	o Options
	// linkLocks serialise fetch_url's freshness check and GET per link
	// ref: two questions about one page fetch it once.
	linkLocks keylock.Locks
}

// New returns the service; it does no I/O.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Pages == nil {
		o.Pages = NewPages(PagesOptions{Log: o.Log})
	}
	return &Service{o: o}
}

// LinkStore keeps what fetch_url learnt of each page (store.Store).
type LinkStore interface {
	WebLink(ctx context.Context, ref string) (store.WebLink, bool, error)
	PutWebLink(ctx context.Context, l store.WebLink) error
	RecordWebRequest(ctx context.Context, r store.WebRequest) error
}

// logRequest puts one web request on the operator's record (the
// dashboard's web panel); losing it loses nothing else.
func (p *Pages) logRequest(ctx context.Context, r store.WebRequest) {
	if p.o.Store == nil {
		return
	}
	r.At = p.o.Registry.Now()
	if err := p.o.Store.RecordWebRequest(context.WithoutCancel(ctx), r); err != nil {
		p.o.Log.Warn("web request not recorded", "group", r.Folder, "tool", r.Tool, "err", err)
	}
}

// outcomeOf names how a failed web request ended, for the record.
func outcomeOf(e *tools.Error) string {
	switch e.Code {
	case tools.CodeForbidden:
		return "refused"
	case tools.CodeRateLimited:
		return "rate_limited"
	case tools.CodeBadRequest:
		return "bad_request"
	}
	return "failed"
}

// errNotModified ends a revalidation the server answered 304: nothing is
// stored, the cached bytes stay.
var errNotModified = errors.New("not modified")

// FetchURL is fetch_url: a web address becomes a link ref of the group's
// chat, fetched through the guard only when its cached bytes are stale,
// then served like any fetched media (the group's copy, transcripts).
func (s *Service) FetchURL(ctx context.Context, g *groups.Group, a tools.FetchURLArgs) (*tools.FetchURLResult, *tools.Error) {
	p := s.o.Pages
	if p.off() {
		return nil, media.ErrPagesOff()
	}
	cu, err := mediaregistry.CanonicalURL(a.URL)
	if err != nil {
		return nil, tools.Errorf(tools.CodeBadRequest, "%v", err)
	}
	key := cu.String()
	rec := store.WebRequest{Folder: g.Folder, Tool: tools.FetchURL, Host: cu.Hostname()}
	// The guard's verdict comes before any lookup or connection.
	u, err := p.o.Web.Parse(key)
	if err != nil {
		herr := webError(err)
		rec.Outcome, rec.Error = outcomeOf(herr), herr.Message
		p.logRequest(ctx, rec)
		return nil, herr
	}
	ref, herr := p.linkRef(ctx, g, key, u)
	if herr != nil {
		return nil, herr
	}
	unlock := s.linkLocks.Lock(ref.ID)
	link, outcome, herr := p.fresh(ctx, g, &ref, u)
	unlock()
	if herr == nil {
		var res *tools.FetchMediaResult
		if res, herr = s.o.Media.Fetch(ctx, g, ref.ID); herr == nil {
			rec.Outcome, rec.Bytes = outcome, res.Size
			if outcome != "fetched" {
				rec.Bytes = 0 // nothing crossed the network
			}
			p.logRequest(ctx, rec)
			out := &tools.FetchURLResult{FetchMediaResult: *res, URL: key, ContentType: link.ContentType}
			out.Cached = outcome != "fetched"
			if link.FinalURL != "" && link.FinalURL != key {
				out.FinalURL = link.FinalURL
			}
			return out, nil
		}
	}
	rec.Outcome, rec.Error = outcomeOf(herr), herr.Message
	p.logRequest(ctx, rec)
	return nil, herr
}

// linkRef finds (or registers) the group's ref of a web address.
func (p *Pages) linkRef(ctx context.Context, g *groups.Group, key string, u *url.URL) (mediaregistry.MediaReference, *tools.Error) {
	id := mediaregistry.LinkID(g.Chat, key)
	ref, err := p.o.Registry.Get(ctx, g, id)
	switch {
	case err == nil:
		return ref, nil
	case errors.Is(err, mediaregistry.ErrExpired):
		// Asked for again: the address is as good as newly shared.
		if err := p.o.Registry.Renew(ctx, id, mediaregistry.Link); err != nil {
			p.o.Log.Error("fetch_url: renewing the link ref", "ref", id, "err", err)
			return ref, tools.Errorf(tools.CodeInternal, "the link could not be recorded")
		}
		if ref, err = p.o.Registry.Get(ctx, g, id); err != nil {
			p.o.Log.Error("fetch_url: registry after renewing", "ref", id, "err", err)
			return ref, tools.Errorf(tools.CodeInternal, "the link could not be looked up")
		}
		return ref, nil
	case !errors.Is(err, mediaregistry.ErrNotFound):
		p.o.Log.Error("fetch_url: registry", "ref", id, "err", err)
		return ref, tools.Errorf(tools.CodeInternal, "the link could not be looked up")
	}
	ref = mediaregistry.MediaReference{ID: id, Channel: mediaregistry.Link, Chat: g.Chat, Kind: mediaregistry.Document,
		FileName: linkName(u), Caption: key, Private: []byte(key)}
	if err := p.o.Registry.Register(ctx, &ref); err != nil {
		// A concurrent fetch of the same address registered it first.
		if got, gerr := p.o.Registry.Get(ctx, g, id); gerr == nil {
			return got, nil
		}
		p.o.Log.Error("fetch_url: registering the link ref", "ref", id, "err", err)
		return ref, tools.Errorf(tools.CodeInternal, "the link could not be recorded")
	}
	return ref, nil
}

// linkName is the file name a page is saved under: the last part of its
// path when it has one, else its host.
func linkName(u *url.URL) string {
	if b := path.Base(u.Path); b != "." && b != "/" && b != "" {
		return b
	}
	return u.Hostname()
}

// fresh makes sure the ref's cached bytes are fresh: reused while the
// server's max-age (or internet.fetch.cache_ttl) lasts, revalidated with
// ETag / Last-Modified after, fetched when there are none. Only a request
// that reaches the network counts against the group's hourly share.
func (p *Pages) fresh(ctx context.Context, g *groups.Group, ref *mediaregistry.MediaReference, u *url.URL) (store.WebLink, string, *tools.Error) {
	link, have, err := p.o.Store.WebLink(ctx, ref.ID)
	if err != nil {
		p.o.Log.Error("fetch_url: link record", "ref", ref.ID, "err", err)
		return link, "", tools.Errorf(tools.CodeInternal, "the link's record could not be read")
	}
	_, cached, err := p.o.Cache.Lookup(ctx, ref.ID)
	if err != nil {
		p.o.Log.Error("fetch_url: media cache", "ref", ref.ID, "err", err)
		return link, "", tools.Errorf(tools.CodeInternal, "the media cache could not be read")
	}
	now := p.o.Registry.Now()
	if have && cached && now.Before(link.FreshUntil) {
		return link, "cached", nil
	}
	if err := p.o.Web.Admit(g.Folder); err != nil {
		return link, "", webError(err)
	}
	var prev webfetch.Validators
	if have && cached {
		prev = webfetch.Validators{ETag: link.ETag, LastModified: link.LastModified}
	}
	link, notModified, herr := p.get(ctx, g.Folder, ref, u, prev)
	if notModified {
		return link, "not_modified", herr
	}
	return link, "fetched", herr
}

// get GETs a link ref's address into the cache (or hears it did not
// change) and records what the server said.
func (p *Pages) get(ctx context.Context, group string, ref *mediaregistry.MediaReference, u *url.URL, prev webfetch.Validators) (store.WebLink, bool, *tools.Error) {
	start := time.Now()
	var resp webfetch.Response
	max := p.o.Web.Config().MaxBytes
	e, err := p.o.Cache.StoreFile(ctx, ref.ID, "", max, func(f mediaregistry.File) error {
		var gerr error
		resp, gerr = p.o.Web.Get(ctx, u, prev, f)
		if gerr == nil && resp.NotModified {
			return errNotModified
		}
		return gerr
	})
	host := u.Hostname()
	switch {
	case errors.Is(err, errNotModified):
		p.o.Log.Info("web page not modified", "group", group, "ref", ref.ID, "host", host, "took", time.Since(start).Round(time.Millisecond))
	case errors.Is(err, mediaregistry.ErrTooLarge):
		err = webfetch.ErrTooLarge
		fallthrough
	case err != nil:
		p.o.Log.Info("web page not fetched", "group", group, "ref", ref.ID, "host", host, "err", err)
		return store.WebLink{}, false, webError(err)
	default:
		// Left by the sweeps until the fetch that follows holds it.
		p.o.Budget.HandOff(media.CacheArea, e.SHA256)
		p.o.Budget.Added(e.Size)
		if p.o.Meter != nil {
			p.o.Meter.MediaDownloaded(ref.Channel, e.Size)
		}
		if err := p.o.Registry.Downloaded(ctx, ref.ID, e.Size); err != nil {
			p.o.Log.Warn("web page download not counted", "ref", ref.ID, "err", err)
		}
		if k := mediaregistry.KindOf(e.MIME); k != ref.Kind {
			if err := p.o.Registry.SetKind(ctx, ref.ID, k); err != nil {
				p.o.Log.Warn("fetch_url: kind not recorded", "ref", ref.ID, "err", err)
			}
			ref.Kind = k
		}
		p.o.Log.Info("web page fetched", "group", group, "ref", ref.ID, "host", host, "status", resp.Status,
			"bytes", e.Size, "mime", e.MIME, "took", time.Since(start).Round(time.Millisecond))
	}
	now := p.o.Registry.Now()
	link := store.WebLink{Ref: ref.ID, URL: string(ref.Private), FinalURL: resp.URL, ContentType: resp.ContentType,
		ETag: resp.ETag, LastModified: resp.LastModified, Fetched: now, FreshUntil: now.Add(resp.Fresh)}
	if resp.NotModified {
		// A 304 may leave out what the 200 said.
		if old, ok, _ := p.o.Store.WebLink(ctx, ref.ID); ok {
			link.FinalURL, link.ContentType = old.FinalURL, old.ContentType
			link.ETag = firstNonEmpty(link.ETag, old.ETag)
			link.LastModified = firstNonEmpty(link.LastModified, old.LastModified)
		}
	}
	if err := p.o.Store.PutWebLink(ctx, link); err != nil {
		p.o.Log.Warn("fetch_url: link record not saved; the page will be fetched again next time", "ref", ref.ID, "err", err)
	}
	return link, resp.NotModified, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Refetch brings back a link ref's bytes the cache lost (evicted,
// swept) while its record said they were fresh: the media service calls
// it for a fetch of a link ref whose bytes are gone.
func (p *Pages) Refetch(ctx context.Context, group string, ref *mediaregistry.MediaReference) (mediaregistry.Entry, *tools.Error) {
	if p.off() {
		return mediaregistry.Entry{}, media.ErrPagesOff()
	}
	u, err := p.o.Web.Parse(string(ref.Private))
	if err != nil {
		return mediaregistry.Entry{}, webError(err)
	}
	if err := p.o.Web.Admit(group); err != nil {
		return mediaregistry.Entry{}, webError(err)
	}
	if _, _, herr := p.get(ctx, group, ref, u, webfetch.Validators{}); herr != nil {
		return mediaregistry.Entry{}, herr
	}
	e, ok, err := p.o.Cache.Lookup(ctx, ref.ID)
	if err != nil || !ok {
		return mediaregistry.Entry{}, tools.Errorf(tools.CodeDownloadFailed, "the page was fetched but could not be kept in the media cache")
	}
	return e, nil
}

// webError answers a failed fetch with the tool error codes of the
// contract: a refused destination is forbidden, before any connection.
func webError(err error) *tools.Error {
	msg := err.Error()
	switch {
	case errors.Is(err, webfetch.ErrForbidden), errors.Is(err, webfetch.ErrDisabled):
		return tools.Errorf(tools.CodeForbidden, "%s", msg)
	case errors.Is(err, webfetch.ErrBadURL):
		return tools.Errorf(tools.CodeBadRequest, "%s", msg)
	case errors.Is(err, webfetch.ErrTooLarge):
		return tools.Errorf(tools.CodeTooLarge, "%s", msg)
	case errors.Is(err, webfetch.ErrRateLimited):
		return tools.Errorf(tools.CodeRateLimited, "%s", msg)
	case errors.Is(err, context.Canceled):
		return tools.Errorf(tools.CodeDownloadFailed, "the fetch was cancelled")
	}
	return tools.Errorf(tools.CodeDownloadFailed, "%s", msg)
}

// MaxSearchQuery bounds web_search's query.
const MaxSearchQuery = 400

// WebSearch is web_search: the query goes to the configured provider and
// each answered query is on the group's bill.
func (s *Service) WebSearch(ctx context.Context, g *groups.Group, a tools.WebSearchArgs) (*tools.WebSearchResult, *tools.Error) {
	if s.o.Search == nil {
		return nil, tools.Errorf(tools.CodeBadRequest, "web search is not configured on this botd (internet.search)")
	}
	q := strings.TrimSpace(a.Query)
	if q == "" {
		return nil, tools.Errorf(tools.CodeBadRequest, "query is required")
	}
	if len(q) > MaxSearchQuery {
		return nil, tools.Errorf(tools.CodeBadRequest, "the query is %d bytes; at most %d", len(q), MaxSearchQuery)
	}
	n := a.Count
	if n <= 0 {
		n = websearch.DefaultCount
	}
	n = min(n, websearch.MaxCount)
	start := time.Now()
	results, err := s.o.Search.Search(ctx, q, n)
	prov := s.o.Search.Provider()
	rec := store.Generation{Folder: g.Folder, Kind: "search", Provider: prov, Model: prov, Units: 1}
	wr := store.WebRequest{Folder: g.Folder, Tool: tools.WebSearch, Host: prov}
	if err != nil {
		s.o.Log.Warn("web search failed", "group", g.Folder, "provider", prov, "err", err)
		if ctx.Err() == nil {
			media.Record(ctx, s.o.Bill, s.o.Log, &rec, "failed", err.Error())
		}
		wr.Outcome, wr.Error = "failed", err.Error()
		s.o.Pages.logRequest(ctx, wr)
		return nil, tools.Errorf(tools.CodeDownloadFailed, "%s", err.Error())
	}
	wr.Outcome = fmt.Sprintf("searched (%d results)", len(results))
	s.o.Pages.logRequest(ctx, wr)
	if s.o.SearchPrice > 0 {
		// USD per query; a micro-cent is 1e-8 USD.
		rec.CostMicrocents, rec.CostKnown = int64(s.o.SearchPrice*1e8+0.5), true
	}
	media.Record(ctx, s.o.Bill, s.o.Log, &rec, "succeeded", "")
	s.o.Log.Info("web search", "group", g.Folder, "provider", prov, "results", len(results), "took", time.Since(start).Round(time.Millisecond))
	out := &tools.WebSearchResult{Provider: prov, Results: make([]tools.SearchResult, 0, len(results))}
	for _, r := range results {
		out.Results = append(out.Results, tools.SearchResult{Title: r.Title, URL: r.URL, Snippet: r.Snippet, Published: r.Published})
	}
	return out, nil
}
