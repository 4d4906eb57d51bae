package main

import (
	"log/slog"
	"net"
	"strconv"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/store"
)

// observe sets up what the web dashboard, /readyz and /metrics show
// about the channels: a monitor between them and the agent, and in the
// log handler.
func (d *daemon) observe() {
	d.mon = web.NewMonitor()
	d.log = slog.New(d.mon.Handler(d.log.Handler()))
}

// buildWeb constructs channels.web when it is enabled: the rooms, their
// uploads and the dashboard, on one server.
func (d *daemon) buildWeb(env channels.Env) error {
	if !webSection(d.cfg).Enabled {
		return nil
	}
	w, err := d.newWeb(env, false)
	if err != nil {
		return err
	}
	d.chans[w.Name()] = w
	return nil
}

// newWeb is the web channel; a standby's (standby) shows the rooms and
// the dashboard and refuses posts.
func (d *daemon) newWeb(env channels.Env, standby bool) (*web.Web, error) {
	c := webSection(d.cfg)
	if c.Listen == web.DefaultListen {
		c.Listen = d.freeListen(c.Listen)
	}
	model, notice := "none", ""
	if ms := d.cfg.LLM.UsableModels(); len(ms) > 0 {
		model = ms[0].Provider + "/" + ms[0].Name
	} else {
		notice = "The assistant cannot answer yet: no LLM API key is set. " + d.cfg.LLMSetup()
		d.log.Warn("no LLM model can answer yet; the web pages say what to set", "problem", d.cfg.MissingLLM())
	}
	o := web.Options{
		DataDir: d.cfg.DataDir, MaxUploadBytes: config.Section[media.Config](d.cfg).MaxDownloadBytes,
		Groups: d.groups, Store: d.store, Monitor: d.mon, Model: model, Notice: notice, Out: d.out, Budget: d.budget,
		Standby: standby, Networks: map[string]bool{},
	}
	for _, n := range channels.Networks() {
		nc := d.cfg.Channels.Network(n.Name)
		o.Networks[n.Name] = nc != nil && nc.On()
	}
	if config.Section[store.Config](d.cfg).Driver == "postgres" {
		// Instances share this database (docs/scaling.md): the dashboard
		// says which one answers.
		o.Lease = d.leaseView
	}
	o.LeaseTrouble = d.leaseTrouble
	o.Pending, o.Decide = d.pendingChats, d.decideChat
	if !standby {
		// A standby has no agent, hence no Policy: its dashboard leaves
		// the groups' settings out.
		o.Settings, o.SetSetting = d.groupSettings, d.setGroupSetting
	}
	w, err := web.New(c, env, o)
	if err != nil {
		return nil, fail(1, "%v", err)
	}
	return w, nil
}

// freeListen is addr, or, when something else holds it, the next free
// port of the same host: a newcomer's `make run` next to another program
// on 8080 starts anyway, and the URL line it prints names the port. Only
// the default address moves; one the config names is kept (and fails
// with a clear error if taken).
func (d *daemon) freeListen(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	first, err := strconv.Atoi(port)
	if err != nil {
		return addr
	}
	for p := first; p < first+20 && p <= 65535; p++ {
		try := net.JoinHostPort(host, strconv.Itoa(p))
		l, err := net.Listen("tcp", try)
		if err != nil {
			continue
		}
		l.Close()
		if p != first {
			d.log.Warn("web: the default address is taken; using the next free port (set channels.web.listen to choose)",
				"taken", addr, "listen", try)
		}
		return try
	}
	return addr
}

// webSection is channels.web, the rooms botd always has (the daemon builds
// them; their package registers their section like any network's).
func webSection(cfg *config.Config) web.Config {
	return *cfg.Channels.Network(web.Name).(*web.Config)
}
