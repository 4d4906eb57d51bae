package main

import (
	"context"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/scheduler"
	"github.com/botd-dev/botd/tools"
)

// newScheduler builds the scheduler of the groups' tasks. A due task is
// delivered to the agent's intake as a message of its group, so it needs
// the agent; it starts with the intake (startScheduler) and stops with it.
func (d *daemon) newScheduler() {
	c := *config.Section[scheduler.Config](d.cfg)
	d.sched = scheduler.New(scheduler.Options{
		Store: d.store, Groups: d.groups, Location: d.cfg.Location(),
		Grace: c.Grace.D(), MaxTasksPerGroup: c.MaxTasksPerGroup, MaxRunsPerHour: c.MaxRunsPerHour,
		Log:  d.log.With("component", "scheduler"),
		Fire: d.agent.DeliverTask,
	})
}

func (d *daemon) startScheduler(ctx context.Context) error {
	if err := d.sched.Start(ctx); err != nil {
		return fail(1, "%v", err)
	}
	d.log.Info("scheduler running", "timezone", d.sched.Location().String(), "grace", config.Section[scheduler.Config](d.cfg).Grace.D())
	return nil
}

func (d *daemon) waitScheduler() {
	if d.sched != nil {
		d.sched.Wait()
	}
}

// hostHandler answers the IPC requests of `botd mcp` clients: each goes to
// the service its tool names in the registry. The services are looked up
// at each call, so it can be handed out before they are built.
type hostHandler struct{ d *daemon }

func (h hostHandler) Handle(ctx context.Context, group string, req *tools.Request) (any, *tools.Error) {
	return tools.Dispatch{tools.Media: h.d.media, tools.Tasks: h.d.sched, tools.Messages: h.d.history}.Handle(ctx, group, req)
}

// caller answers the built-in agent's botd tools in-process, routed like
// hostHandler.
func (d *daemon) caller(group string) mcp.Caller {
	return tools.InProcess{Handler: hostHandler{d: d}, Group: group}
}
