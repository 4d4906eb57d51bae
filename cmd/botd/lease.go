package main

import (
	"context"

	"github.com/botd-dev/botd/lease"
)

// whileActive runs serve while this instance holds botd's lease (package
// lease): it stands by until the lease is free or lapsed, serves with a
// context that ends when the lease may be lost, and returns when ctx ends
// (the lease released, so a standby takes over at once). Having lost the
// lease it exits with an error instead of standing by again: the daemon's
// parts are built once per process, and the restart its supervisor makes
// stands by. On SQLite, the one instance takes the lease at start.
func (d *daemon) whileActive(ctx context.Context, serve func(context.Context) error) error {
	id := lease.InstanceID(d.cfg.Database.InstanceID)
	log := d.log.With("component", "lease", "instance", id)
	k, err := lease.New(lease.Options{Store: d.store, Holder: id, Log: log, TakeAtStart: d.cfg.Database.Driver == "sqlite"})
	if err != nil {
		return err
	}
	log.Info("taking the lease (standing by while another instance holds it)")
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := false
	err = k.Run(runCtx, func(actx context.Context) error {
		err := serve(actx)
		if actx.Err() != nil && ctx.Err() == nil {
			lost = true
			cancel()
		}
		return err
	})
	if lost {
		return fail(1, "stopped: the lease was lost (another instance took it, or the database was unreachable for %s); restart to stand by", lease.DefaultGiveUp)
	}
	return err
}
