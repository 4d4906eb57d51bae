package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	// Source is whose table it is: "botd", or the Attached's Name.
	Source   string
	Table    string
	From, To int64
}

// Attached is another SQLite database whose tables go into Postgres with
// botd's, in the same transaction: the WhatsApp session, whatsmeow's
// sqlstore, whose tables and schema version are whatsmeow's own. Its
// owner has created its tables on Postgres already (with its own
// migrations, at the version of the SQLite copy); they must be empty.
type Attached struct {
	// Name says whose tables they are in messages ("whatsapp session").
	Name string
	// DB is the SQLite database.
	DB *sql.DB
	// Tables are the tables to copy, in any order: one a foreign key
	// names is copied before those that refer to it.
	Tables []string
}

// CopyTo copies every row of every botd table of s (an SQLite store) into
// to (a Postgres store, migrated to the same schema version and empty),
// with the tables of each attached database, in one transaction, so a
// failure leaves it empty; ids are kept and the identity counters continue
// after them. Values are converted to the Postgres columns' types (SQLite
// keeps booleans as integers and may keep bytes as text). It returns each
// table's row count in both, compared before the commit: a difference is
// an error and nothing is kept.
func (s *Store) CopyTo(ctx context.Context, to *Store, also ...Attached) ([]TableCount, error) {
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
		// A virtual table (the messages' FTS5 index) and its shadow
		// tables are SQLite's own index: Postgres keeps its own (a
		// generated column), filled as the rows arrive.
	}, `SELECT name FROM sqlite_master m WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations'
		AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'
		AND NOT EXISTS (SELECT 1 FROM sqlite_master v WHERE v.type = 'table' AND v.sql LIKE 'CREATE VIRTUAL TABLE%'
			AND substr(m.name, 1, length(v.name) + 1) = v.name || '_')
		ORDER BY name`)
	if err != nil {
		return nil, err
	}
	sources := append([]Attached{{Name: "botd", DB: s.DB, Tables: tables}}, also...)
	for _, src := range sources {
		for _, t := range src.Tables {
			var n int64
			if err := to.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t).Scan(&n); err != nil {
				return nil, fmt.Errorf("copy: %s on postgres: %w", t, err)
			}
			if n != 0 {
				return nil, fmt.Errorf("copy: the postgres database already holds %s data (%d rows in %s); copy only into an empty one", src.Name, n, t)
			}
		}
	}
	tx, err := to.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	defer tx.Rollback()
	var counts []TableCount
	var bad []string
	for _, src := range sources {
		order, err := parentsFirst(ctx, src.DB, src.Tables)
		if err != nil {
			return nil, err
		}
		for _, t := range order {
			if err := copyTable(ctx, src.DB, tx, t); err != nil {
				return nil, err
			}
		}
		for _, t := range src.Tables {
			c := TableCount{Source: src.Name, Table: t}
			if err := src.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t).Scan(&c.From); err != nil {
				return nil, fmt.Errorf("copy: count %s: %w", t, err)
			}
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t).Scan(&c.To); err != nil {
				return nil, fmt.Errorf("copy: count %s: %w", t, err)
			}
			if c.From != c.To {
				bad = append(bad, fmt.Sprintf("%s: %d rows in sqlite, %d in postgres", t, c.From, c.To))
			}
			counts = append(counts, c)
		}
	}
	if len(bad) > 0 {
		return counts, fmt.Errorf("copy: row counts differ, nothing kept: %s", strings.Join(bad, "; "))
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("copy: commit: %w", err)
	}
	return counts, nil
}

// parentsFirst orders tables so that one a foreign key names comes
// before the tables that refer to it.
func parentsFirst(ctx context.Context, db *sql.DB, tables []string) ([]string, error) {
	parents := map[string][]string{}
	for _, t := range tables {
		ps, err := sqlrows.Query(ctx, db, "copy: foreign keys of "+t, func(r sqlrows.Scanner) (string, error) {
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

// copyTable moves one table's rows from the SQLite database db in its
// insertion order (so the rowid Postgres gives them keeps it), each value
// made what its Postgres column takes, and moves its id counter past them.
func copyTable(ctx context.Context, db *sql.DB, tx *sql.Tx, table string) error {
	cols, err := sqlrows.Query(ctx, db, "copy: columns of "+table, func(r sqlrows.Scanner) (string, error) {
		var n string
		return n, r.Scan(&n)
	}, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return err
	}
	types, err := columnTypes(ctx, tx, table)
	if err != nil {
		return err
	}
	convs := make([]conversion, len(cols))
	marks := make([]string, len(cols))
	for i, c := range cols {
		t, ok := types[c]
		if !ok {
			return fmt.Errorf("copy: %s.%s: no such column on postgres", table, c)
		}
		convs[i], marks[i] = convertTo(t)
	}
	rows, err := db.QueryContext(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+table+` ORDER BY rowid`)
	if err != nil {
		return fmt.Errorf("copy: read %s: %w", table, err)
	}
	defer rows.Close()
	one := "(" + strings.Join(marks, ",") + ")"
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
		for i, v := range vals {
			if v == nil || convs[i] == nil {
				continue
			}
			if vals[i], err = convs[i](v); err != nil {
				return fmt.Errorf("copy: %s.%s: %w", table, cols[i], err)
			}
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

// columnTypes is each column of table on Postgres with its type, as
// information_schema spells it (bigint, text, bytea, boolean, uuid…).
func columnTypes(ctx context.Context, tx *sql.Tx, table string) (map[string]string, error) {
	type col struct{ name, typ string }
	cs, err := sqlrows.Query(ctx, tx, "copy: columns of "+table+" on postgres", func(r sqlrows.Scanner) (col, error) {
		var c col
		return c, r.Scan(&c.name, &c.typ)
	}, `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = ?`, table)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("copy: no table %s on postgres", table)
	}
	m := make(map[string]string, len(cs))
	for _, c := range cs {
		m[c.name] = c.typ
	}
	return m, nil
}

// A conversion makes a value read from SQLite (never nil) one the Postgres
// column takes.
type conversion func(v any) (any, error)

// convertTo is how a value goes into a Postgres column of type typ: the
// conversion (nil: as it is) and the placeholder. The handle rewrites a Go
// bool to 0/1 for botd's INTEGER flags, so a boolean column (whatsmeow's)
// takes the integer and compares it in SQL; a type with no Go value of
// its own (uuid, json…) takes its text and casts it.
func convertTo(typ string) (conversion, string) {
	switch typ {
	case "boolean":
		return toFlag, "(CAST(? AS BIGINT) <> 0)"
	case "bytea":
		return toBytes, "?"
	case "text", "character varying", "character":
		return toText, "?"
	case "bigint", "integer", "smallint", "double precision", "real", "numeric":
		return nil, "?"
	default:
		return toText, "CAST(CAST(? AS TEXT) AS " + typ + ")"
	}
}

// toFlag reads SQLite's ways of keeping a boolean: 0/1 (whatsmeow's
// writes), a float, or text such as 'true'.
func toFlag(v any) (any, error) {
	flag := func(b bool) (any, error) {
		if b {
			return int64(1), nil
		}
		return int64(0), nil
	}
	switch x := v.(type) {
	case bool:
		return flag(x)
	case int64:
		return flag(x != 0)
	case float64:
		return flag(x != 0)
	case string, []byte:
		switch t := strings.ToLower(strings.TrimSpace(asText(x))); t {
		case "1", "t", "true", "y", "yes", "on":
			return flag(true)
		case "0", "f", "false", "n", "no", "off":
			return flag(false)
		default:
			return nil, fmt.Errorf("%q is not a boolean", t)
		}
	}
	return nil, fmt.Errorf("a %T is not a boolean", v)
}

// toBytes keeps bytes SQLite holds as text as the same bytes.
func toBytes(v any) (any, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return nil, fmt.Errorf("a %T where bytes belong", v)
}

// toText keeps text SQLite holds as a blob as text (the handle makes it
// storable), and numbers in text columns as their decimal text.
func toText(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	}
	return nil, fmt.Errorf("a %T where text belongs", v)
}

func asText(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	s, _ := v.(string)
	return s
}
