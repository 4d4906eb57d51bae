package main

import (
	"fmt"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/lease"
	"github.com/botd-dev/botd/ops"
)

// observeOps wires botd's metrics (package ops) into the parts that are
// process-wide: the box's children. The others get theirs where they are
// built (the agent, the media service, the channels' sink).
func (d *daemon) observeOps() {
	d.metrics = ops.New()
	box.OnKilled(d.metrics.BoxKilled)
	d.metrics.WatchChannels(func() []ops.ChannelState {
		states := d.mon.States()
		out := make([]ops.ChannelState, len(states))
		for i, s := range states {
			out[i] = ops.ChannelState{Name: s.Name, Connected: s.State == "running"}
		}
		return out
	})
}

// startOps serves /healthz, /readyz and /metrics at ops.listen for as
// long as the process runs, standing by and active; d.keeper must be
// set. The default address taken (a second botd on the host) is logged
// and left out, as the web channel's default is moved: the instance runs.
// An address the config names must be served, or botd does not start.
func (d *daemon) startOps() (stop func(), err error) {
	addr := config.Section[ops.Config](d.cfg).Listen
	if addr == "" {
		d.log.Info("ops: /healthz, /readyz and /metrics are off (ops.listen is empty)")
		return func() {}, nil
	}
	k := d.keeper
	d.metrics.WatchLease(func() ops.LeaseState {
		st := k.Status()
		return ops.LeaseState{Active: st.Role == lease.Active, Epoch: st.Lease.Epoch}
	})
	ln, err := ops.Listen(addr)
	if err != nil {
		if addr == ops.DefaultListen {
			d.log.Warn("ops: the default address is taken; /healthz, /readyz and /metrics are not served (set ops.listen to choose)",
				"listen", addr, "err", err)
			return func() {}, nil
		}
		return nil, fail(1, "%v", err)
	}
	srv := ops.Serve(ln, d.metrics, d.ready, d.log.With("component", "ops"))
	d.log.Info("ops: serving /healthz, /readyz and /metrics", "addr", srv.Addr())
	return srv.Close, nil
}

// ready is /readyz: this instance holds the lease, serves, and every
// channel it started is connected (as the dashboard's monitor sees them).
func (d *daemon) ready() (bool, string) {
	switch st := d.keeper.Status(); st.Role {
	case lease.Active:
	case lease.Standby:
		if v := d.leaseView(); v.Active != "" && v.Active != v.This {
			return false, fmt.Sprintf("standby: %s is active", v.Active)
		}
		return false, "standby: no instance is active yet; this one takes over at its next try"
	default:
		return false, "starting: taking the lease"
	}
	for _, s := range d.mon.States() {
		if s.State != "running" {
			return false, fmt.Sprintf("channel %s is not connected (%s)", s.Name, s.State)
		}
	}
	if !d.serving.Load() {
		return false, "starting or stopping: the channels and the agent are not serving"
	}
	return true, ""
}
