package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// WebLink is what the last fetch of a link ref learnt: where the page
// ended up, what it was, and how to ask for it again.
type WebLink struct {
	Ref          string
	URL          string // as asked for, canonical
	FinalURL     string // after redirects
	ContentType  string // as the server sent it (charset kept)
	ETag         string
	LastModified string
	Fetched      time.Time
	FreshUntil   time.Time // reused without asking the server before this
}

// WebLink returns the link row of ref; ok is false when it was never
// fetched.
func (s *Store) WebLink(ctx context.Context, ref string) (WebLink, bool, error) {
	l := WebLink{Ref: ref}
	var fetched, fresh int64
	err := s.DB.QueryRowContext(ctx, `SELECT url, final_url, content_type, etag, last_modified, fetched, fresh_until
		FROM web_links WHERE ref_id = ?`, ref).Scan(&l.URL, &l.FinalURL, &l.ContentType, &l.ETag, &l.LastModified, &fetched, &fresh)
	if errors.Is(err, sql.ErrNoRows) {
		return WebLink{}, false, nil
	}
	if err != nil {
		return WebLink{}, false, fmt.Errorf("web link %s: %w", ref, err)
	}
	l.Fetched, l.FreshUntil = time.UnixMilli(fetched), time.UnixMilli(fresh)
	return l, true, nil
}

// PutWebLink records a fetch of a link ref, replacing the last one.
func (s *Store) PutWebLink(ctx context.Context, l WebLink) error {
	_, err := s.DB.ExecContext(ctx, `INSERT INTO web_links(ref_id, url, final_url, content_type, etag, last_modified, fetched, fresh_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(ref_id) DO UPDATE SET url = excluded.url, final_url = excluded.final_url,
		content_type = excluded.content_type, etag = excluded.etag, last_modified = excluded.last_modified,
		fetched = excluded.fetched, fresh_until = excluded.fresh_until`,
		l.Ref, l.URL, l.FinalURL, l.ContentType, l.ETag, l.LastModified, l.Fetched.UnixMilli(), l.FreshUntil.UnixMilli())
	if err != nil {
		return fmt.Errorf("record web link %s: %w", l.Ref, err)
	}
	return nil
}

// WebRequest is one fetch_url or web_search as the operator sees it: which
// group, which host (or search provider), how many bytes came, and how it
// ended. URLs are not kept whole: a path can hold what a member typed.
type WebRequest struct {
	Folder  string
	At      time.Time
	Tool    string // fetch_url | web_search
	Host    string
	Bytes   int64
	Outcome string // fetched | cached | not_modified | refused | failed | rate_limited | searched
	Error   string
}

// RecordWebRequest stores one web request.
func (s *Store) RecordWebRequest(ctx context.Context, r WebRequest) error {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	_, err := s.DB.ExecContext(ctx, `INSERT INTO web_requests(folder, at, tool, host, bytes, outcome, error) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		r.Folder, r.At.UnixMilli(), r.Tool, r.Host, r.Bytes, r.Outcome, r.Error)
	if err != nil {
		return fmt.Errorf("record %s of %s: %w", r.Tool, r.Folder, err)
	}
	return nil
}

// RecentWebRequests lists the newest web requests of every group.
func (s *Store) RecentWebRequests(ctx context.Context, limit int) ([]WebRequest, error) {
	return sqlrows.Query(ctx, s.DB, "recent web requests", func(row sqlrows.Scanner) (WebRequest, error) {
		var r WebRequest
		var at int64
		err := row.Scan(&r.Folder, &at, &r.Tool, &r.Host, &r.Bytes, &r.Outcome, &r.Error)
		r.At = time.UnixMilli(at)
		return r, err
	}, `SELECT folder, at, tool, host, bytes, outcome, error FROM web_requests ORDER BY at DESC, id DESC LIMIT ?`, limit)
}
