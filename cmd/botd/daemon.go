package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// daemon wires the packages together for `botd run`.
type daemon struct {
	cfg    *config.Config
	log    *slog.Logger
	store  *store.Store
	reg    *mediaregistry.Registry
	groups *groups.Set
	wg     sync.WaitGroup
}

func newDaemon(cfg *config.Config, log *slog.Logger) (*daemon, error) {
	gs, err := groups.NewSet(cfg.AssistantName, cfg.GroupList())
	if err != nil {
		return nil, fail(1, "groups: %v", err)
	}
	return &daemon{cfg: cfg, log: log, groups: gs}, nil
}

// open does the start-up work shared by `run` and `mcp`: the database, the
// registry and the group workspaces.
func (d *daemon) open(ctx context.Context) error {
	st, err := store.Open(ctx, filepath.Join(d.cfg.DataDir, "botd.db"))
	if err != nil {
		return err
	}
	d.store = st
	d.reg = mediaregistry.New(st.DB, d.cfg.Media.RefTTL.D())
	for _, g := range d.groups.All() {
		if _, err := groups.EnsureWorkspace(d.cfg.GroupsDir, g); err != nil {
			return err
		}
	}
	return nil
}

func (d *daemon) close() {
	d.wg.Wait()
	if d.store != nil {
		d.store.Close()
	}
}

func (d *daemon) run(ctx context.Context) error {
	if err := d.open(ctx); err != nil {
		d.close()
		return fmt.Errorf("start: %w", err)
	}
	defer d.close()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.reg.RunSweeper(ctx, d.cfg.Media.SweepInterval.D(), d.log)
	}()
	return errNotYet("the agent loop (botd run)")
}
