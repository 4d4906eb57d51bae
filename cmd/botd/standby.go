package main

import (
	"context"
	"fmt"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/lease"
	"github.com/botd-dev/botd/scheduler"
	"github.com/botd-dev/botd/tools"
)

// What an instance standing by serves (docs/scaling.md), until it takes
// the lease: the web rooms and the dashboard, marked standby, their posts
// refused; and the IPC host of `botd mcp` clients, answering the tools a
// standby may (tools.Spec.Standby: reads of the shared database, the
// media store and the web) and refusing the others with tools.CodeStandby
// and the name of the active instance. Its channels, agent, scheduler and
// sweepers do not run: they are the active instance's.

// standBy starts the standby's services and returns the function that
// stops them and waits, called when the instance takes the lease (its
// active services then start in their place, on the same IPC folder and
// web address) or stops. A service that cannot start is logged and left
// out: standing by to take over matters more.
func (d *daemon) standBy(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	log := d.log.With("component", "standby")
	var waits []func()
	stop = func() {
		cancel()
		for _, w := range waits {
			w()
		}
	}
	ms, _, err := d.newMedia(nil)
	if err != nil {
		log.Error("standby: the media tools are not served while standing by", "err", err)
		return stop
	}
	sched := scheduler.New(scheduler.Options{
		Store: d.store, Groups: d.groups, Location: d.cfg.Location(), Log: d.log.With("component", "scheduler"),
	})
	h := standbyHandler{serve: tools.Dispatch{tools.Media: ms, tools.Tasks: sched, tools.Messages: d.history}, why: d.standbyText}
	host := d.newHost(h, log)
	if err := host.Start(ctx); err != nil {
		log.Error("standby: `botd mcp` clients are not answered while standing by", "err", err)
	} else {
		waits = append(waits, host.Wait)
	}
	if webSection(d.cfg).Enabled {
		env := channels.Env{Registry: d.reg, Sink: refusingSink{}, Log: d.log, AssistantName: d.cfg.AssistantName}
		w, err := d.newWeb(env, true)
		if err == nil {
			err = w.Start(ctx)
		}
		if err != nil {
			log.Error("standby: the web rooms and dashboard are not served while standing by", "err", err)
		} else {
			waits = append(waits, w.Wait)
		}
	}
	log.Info("standing by: serving the dashboard and `botd mcp` reads; the active instance answers", "active", d.leaseView().Active)
	return stop
}

// leaseView is the lease as this instance's Keeper last read it.
func (d *daemon) leaseView() web.LeaseView {
	v := web.LeaseView{This: d.instance}
	if d.keeper == nil {
		return v
	}
	st := d.keeper.Status()
	l := st.Lease
	// An active whose renewals fail holds the lease still (the one
	// instance on SQLite runs on through them), lapsed or not.
	if l.Holder != "" && (l.Live(time.Now()) || st.Role == lease.Active) {
		v.Active, v.Since, v.Epoch = l.Holder, l.Acquired, l.Epoch
	}
	return v
}

// leaseTrouble is why this instance's lease renewals fail, and since
// when; "" while they succeed.
func (d *daemon) leaseTrouble() (string, time.Time) {
	if d.keeper == nil {
		return "", time.Time{}
	}
	st := d.keeper.Status()
	return st.RenewError, st.FailingSince
}

// standbyText says, for an answer to a `botd mcp` client, that this
// instance stands by and which one answers.
func (d *daemon) standbyText() string {
	v := d.leaseView()
	if v.Active == "" || v.Active == v.This {
		return fmt.Sprintf("this botd instance (%s) is standing by and no instance is active right now; ask again in a minute", v.This)
	}
	return fmt.Sprintf("this botd instance (%s) is standing by: %s is active since %s (lease epoch %d); use the MCP server beside it, or ask again once this one takes over",
		v.This, v.Active, v.Since.UTC().Format("2006-01-02 15:04:05 UTC"), v.Epoch)
}

// standbyHandler answers `botd mcp` clients on a standby.
type standbyHandler struct {
	serve tools.Handler
	why   func() string
}

var _ tools.Handler = standbyHandler{}

func (h standbyHandler) Handle(ctx context.Context, group string, req *tools.Request) (any, *tools.Error) {
	s, ok := tools.Lookup(req.Type)
	if ok && !s.Standby {
		return nil, tools.Errorf(tools.CodeStandby, "%s was not carried out: %s", req.Type, h.why())
	}
	res, err := h.serve.Handle(ctx, group, req)
	if err != nil && err.Code == tools.CodeDownloadFailed {
		// Its channel runs on the active instance only.
		err.Message += " (" + h.why() + ")"
	}
	return res, err
}

// refusingSink is a standby web server's: it refuses posts before they
// reach it, so a message that does is refused here too, never stored.
type refusingSink struct{}

func (refusingSink) Registered(string) bool { return true }
func (refusingSink) Deliver(context.Context, channels.Inbound) error {
	return fmt.Errorf("this instance is standing by")
}
func (refusingSink) Migrated(context.Context, string, string) {}
