package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
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
