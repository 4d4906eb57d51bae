package main

import (
	"context"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/lease"
	"github.com/botd-dev/botd/store"
)

// whileActive runs serve while this instance holds botd's lease (package
// lease): it stands by until the lease is free or lapsed, serves with a
// context that ends when the lease may be lost, and returns when ctx ends
// (the lease released, so a standby takes over at once). Having lost the
// lease it exits with an error instead of standing by again: the daemon's
// parts are built once per process, and the restart its supervisor makes
// stands by. On SQLite, the one instance (its data folder locked for it,
// datalock.go) takes the lease at start and never gives it up: a renewal
// failing there is retried and reported, since nobody can take over.
func (d *daemon) whileActive(ctx context.Context, serve func(context.Context) error) error {
	dbc := config.Section[store.Config](d.cfg)
	id := lease.InstanceID(dbc.InstanceID)
	log := d.log.With("component", "lease", "instance", id)
	// stopStandby is set and called on Run's goroutine only: StandingBy
	// runs there, and active after it in the goroutine Run starts.
	var stopStandby func()
	sqlite := dbc.Driver == "sqlite"
	k, err := lease.New(lease.Options{Store: d.store, Holder: id, Log: log, TakeAtStart: sqlite, Sole: sqlite,
		StandingBy: func() { stopStandby = d.standBy(ctx) }})
	if err != nil {
		return err
	}
	d.instance, d.keeper = id, k
	stopOps, err := d.startOps()
	if err != nil {
		return err
	}
	defer stopOps()
	log.Info("taking the lease (standing by while another instance holds it)")
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		if stopStandby != nil {
			stopStandby()
		}
	}()
	lost := false
	err = k.Run(runCtx, func(actx context.Context) error {
		if stopStandby != nil {
			// The active services take the standby's IPC folder and
			// web address.
			stopStandby()
			stopStandby = nil
		}
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
