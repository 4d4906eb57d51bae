package main

import (
	"context"
	"os"
	"time"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/mediaregistry/s3store"
	"github.com/botd-dev/botd/store"
)

// bucket opens media.store's bucket, whatever the type (migrate reads it
// while the type is still local).
func bucket(cfg *config.Config) (*s3store.Store, error) {
	st, err := s3store.New(config.Section[media.Config](cfg).Store.S3())
	if err != nil {
		return nil, fail(1, "media.store: %v", err)
	}
	return st, nil
}

// useStore puts the cache on media.store: nothing to do for local.
func useStore(cfg *config.Config, cache *mediaregistry.Cache) error {
	if config.Section[media.Config](cfg).Store.Type != media.StoreS3 {
		return nil
	}
	st, err := bucket(cfg)
	if err != nil {
		return err
	}
	cache.UseStore(st)
	return nil
}

// presignStatTimeout bounds the look for the object behind a presigned URL.
const presignStatTimeout = 5 * time.Second

// storeCheckTimeout bounds `botd config check`'s probe of the bucket.
const storeCheckTimeout = 20 * time.Second

// checkStore proves an s3 bucket reachable and writable.
func checkStore(ctx context.Context, cfg *config.Config) error {
	if config.Section[media.Config](cfg).Store.Type != media.StoreS3 {
		return nil
	}
	st, err := bucket(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	return st.Check(ctx)
}

// remoteLinks are the resource links of `botd mcp --http`, with presigned
// URLs when the bucket keeps the bytes. A URL is only offered once the
// object is there (the upload runs after the fetch, in the daemon).
func remoteLinks(cfg *config.Config) (*mcp.LinkOptions, error) {
	mc := config.Section[media.Config](cfg)
	l := &mcp.LinkOptions{TTL: mc.LinkTTL.D()}
	if mc.Store.Type != media.StoreS3 {
		return l, nil
	}
	b, err := bucket(cfg)
	if err != nil {
		return nil, err
	}
	l.Presign = func(ctx context.Context, sha, name, mime string, ttl time.Duration) (string, error) {
		// A bucket that does not answer must not hold up the tool call:
		// the resource link works without the URL.
		ctx, cancel := context.WithTimeout(ctx, presignStatTimeout)
		defer cancel()
		if _, err := b.Stat(ctx, sha); err != nil {
			return "", err
		}
		return b.PresignGet(ctx, sha, name, mime, ttl)
	}
	return l, nil
}

// databaseExists fails with what+": …" when the config's SQLite database
// was never made (a command that only reads should not create it); a
// Postgres database is the operator's to make.
func databaseExists(cfg *config.Config, what string) error {
	dbc := config.Section[store.Config](cfg)
	if dbc.Driver != "sqlite" {
		return nil
	}
	db := dbc.Path(cfg.DataDir)
	if _, err := os.Stat(db); err != nil {
		return fail(1, "%s: %s does not exist (has `botd run` run with data_dir %s?)", what, db, cfg.DataDir)
	}
	return nil
}
