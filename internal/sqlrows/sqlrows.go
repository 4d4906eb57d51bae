// Package sqlrows reads a query's rows into a slice. It is the one home of
// the rows.Next / Scan / rows.Err / Close loop that every package keeping
// tables in botd's SQLite database needs, so each list query says only its
// SQL and how one row becomes a value.
package sqlrows

import (
	"context"
	"database/sql"
	"fmt"
)

// Scanner is what a row scan function reads: both *sql.Row and *sql.Rows
// are one, so a package's scanX serves a single-row lookup and a list.
type Scanner interface{ Scan(dest ...any) error }

// Querier runs a query: *sql.DB, *sql.Tx and *sql.Conn are one.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Query runs query with args and turns every row into a T with scan, in
// order. Any error (the query, a row's scan, the iteration) comes back
// wrapped as "what: err" with no rows: a caller never acts on half a list.
// No rows is a nil slice.
func Query[T any](ctx context.Context, db Querier, what string, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
