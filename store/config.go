package store

import (
	"context"
	"path/filepath"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/internal/sqldialect"
)

// Config is the database section of botd's config file: which database
// keeps botd's tables.
type Config struct {
	// Driver is sqlite (one file, one instance; the default) or postgres
	// (what two instances share).
	Driver string `yaml:"driver"`
	// DSN is, for sqlite, the database file (empty: <data_dir>/botd.db);
	// for postgres, a libpq connection string or postgres:// URL, required.
	DSN string `yaml:"dsn"`
	// InstanceID names this instance in the lease (botd status shows it);
	// empty: hostname, pid and a random suffix. Unique per running process:
	// an instance starting under the id of the lease's holder takes it
	// at once, as a restart of that holder.
	InstanceID string `yaml:"instance_id"`
}

// DefaultConfig is SQLite at <data_dir>/botd.db.
func DefaultConfig() Config { return Config{Driver: string(sqldialect.SQLite)} }

// The section registers itself: package config decodes database through
// Config without importing this package.
func init() {
	settings.Register("database", DefaultConfig, func(c *Config, _ settings.Shared) error { return c.Validate() })
}

// Validate reports every problem of the section with its key path.
func (c Config) Validate() error {
	var ps settings.Problems
	switch sqldialect.Dialect(c.Driver) {
	case sqldialect.SQLite:
	case sqldialect.Postgres:
		if c.DSN == "" {
			ps.AddSecret("database.dsn", "required with driver postgres (host=… user=… dbname=… or postgres://…)", settings.SetHint)
		} else if err := sqldialect.ParseDSN(c.DSN); err != nil {
			ps.Add("database.dsn", "%v", err)
		}
	default:
		ps.Add("database.driver", "must be sqlite or postgres, not %q", c.Driver)
	}
	return ps.Err()
}

// Paths is the section's files that package config makes relative to the
// config file: an SQLite database's (a Postgres DSN is not a path).
func (c *Config) Paths() []*string {
	if sqldialect.Dialect(c.Driver) == sqldialect.SQLite {
		return []*string{&c.DSN}
	}
	return nil
}

// Path is where an SQLite database lives: the DSN, or <dataDir>/botd.db.
func (c Config) Path(dataDir string) string {
	if c.DSN != "" {
		return c.DSN
	}
	return filepath.Join(dataDir, "botd.db")
}

// Connect opens the database c names and migrates it.
func Connect(ctx context.Context, c Config, dataDir string) (*Store, error) {
	if sqldialect.Dialect(c.Driver) == sqldialect.Postgres {
		return OpenPostgres(ctx, c.DSN)
	}
	return Open(ctx, c.Path(dataDir))
}
