package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/internal/sqlrows"
)

// copyBatch is how many rows go in one INSERT: Postgres takes at most
// 65535 parameters in a statement, and botd's widest table has 18
// columns.
const copyBatch = 500

// TableCount is one table's rows in the database copied from and in the
// one copied to.
type TableCount struct {
	Table    string
	From, To int64
}

// CopyTo copies every row of every botd table of s (an SQLite store) into
// to (a Postgres store, migrated to the same schema version and empty),
// in one transaction, so a failure leaves it empty; ids are kept and the
// identity counters continue after them. It returns each table's row count
// in both, checked: a difference is an error.
func (s *Store) CopyTo(ctx context.Context, to *Store) ([]TableCount, error) {
	if s.Dialect != sqldialect.SQLite || to.Dialect != sqldialect.Postgres {
		return nil, fmt.Errorf("copy: from sqlite to postgres only, not %s to %s", s.Dialect, to.Dialect)
	}
	vf, err := s.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	vt, err := to.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	if vf != vt {
		return nil, fmt.Errorf("copy: schema versions differ (%d and %d)", vf, vt)
	}
	tables, err := sqlrows.Query(ctx, s.DB, "copy: tables", func(r sqlrows.Scanner) (string, error) {
		var n string
		return n, r.Scan(&n)
	}, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		var n int64
		if err := to.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t).Scan(&n); err != nil {
			return nil, fmt.Errorf("copy: %s on postgres: %w", t, err)
		}
		if n != 0 {
			return nil, fmt.Errorf("copy: the postgres database already holds botd data (%d rows in %s); copy only into an empty one", n, t)
		}
	}
	tx, err := to.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	defer tx.Rollback()
	order, err := s.parentsFirst(ctx, tables)
	if err != nil {
		return nil, err
	}
	for _, t := range order {
		if err := s.copyTable(ctx, tx, t); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("copy: commit: %w", err)
	}
	counts := make([]TableCount, 0, len(tables))
	var bad []string
	for _, t := range tables {
		c := TableCount{Table: t}
		if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t).Scan(&c.From); err != nil {
			return nil, fmt.Errorf("copy: count %s: %w", t, err)
		}
		if err := to.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t).Scan(&c.To); err != nil {
			return nil, fmt.Errorf("copy: count %s: %w", t, err)
		}
		if c.From != c.To {
			bad = append(bad, fmt.Sprintf("%s: %d rows in sqlite, %d in postgres", t, c.From, c.To))
		}
		counts = append(counts, c)
	}
	if len(bad) > 0 {
		return counts, fmt.Errorf("copy: row counts differ: %s", strings.Join(bad, "; "))
	}
	return counts, nil
}

// parentsFirst orders tables so that one a foreign key names comes
// before the tables that refer to it.
func (s *Store) parentsFirst(ctx context.Context, tables []string) ([]string, error) {
	parents := map[string][]string{}
	for _, t := range tables {
		ps, err := sqlrows.Query(ctx, s.DB, "copy: foreign keys of "+t, func(r sqlrows.Scanner) (string, error) {
			var n string
			return n, r.Scan(&n)
		}, `SELECT DISTINCT "table" FROM pragma_foreign_key_list(?)`, t)
		if err != nil {
			return nil, err
		}
		parents[t] = ps
	}
	var order []string
	done := map[string]bool{}
	var visit func(t string, depth int)
	visit = func(t string, depth int) {
		if done[t] || depth > len(tables) {
			return
		}
		for _, p := range parents[t] {
			if p != t {
				visit(p, depth+1)
			}
		}
		if !done[t] {
			done[t] = true
			order = append(order, t)
		}
	}
	for _, t := range tables {
		visit(t, 0)
	}
	return order, nil
}

// copyTable moves one table's rows in SQLite's insertion order (so the
// rowid Postgres gives them keeps it) and moves its id counter past them.
func (s *Store) copyTable(ctx context.Context, tx *sql.Tx, table string) error {
	cols, err := sqlrows.Query(ctx, s.DB, "copy: columns of "+table, func(r sqlrows.Scanner) (string, error) {
		var n string
		return n, r.Scan(&n)
	}, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return err
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+table+` ORDER BY rowid`)
	if err != nil {
		return fmt.Errorf("copy: read %s: %w", table, err)
	}
	defer rows.Close()
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + ")"
	head := `INSERT INTO ` + table + `(` + strings.Join(cols, ", ") + `) VALUES `
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		n := len(args) / len(cols)
		q := head + strings.TrimSuffix(strings.Repeat(one+",", n), ",")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("copy: write %s: %w", table, err)
		}
		args = args[:0]
		return nil
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("copy: read %s: %w", table, err)
		}
		args = append(args, vals...)
		if len(args)/len(cols) == copyBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("copy: read %s: %w", table, err)
	}
	if err := flush(); err != nil {
		return err
	}
	// An identity key (id, seq): the next row gets the next number after
	// the copied ones. The rowid Postgres numbered itself.
	keys, err := sqlrows.Query(ctx, tx, "copy: key of "+table, func(r sqlrows.Scanner) (string, error) {
		var n string
		return n, r.Scan(&n)
	}, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = ? AND is_identity = 'YES' AND column_name != 'rowid'`, table)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence(?, ?), (SELECT COALESCE(MAX(`+k+`), 0) + 1 FROM `+table+`), false)`,
			table, k); err != nil {
			return fmt.Errorf("copy: %s.%s counter: %w", table, k, err)
		}
	}
	return nil
}
