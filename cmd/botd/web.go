package main

import (
	"log/slog"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/web"
)

// observe sets up what the web dashboard shows about the channels: a
// monitor between them and the agent, and in the log handler.
func (d *daemon) observe() {
	if !d.cfg.Channels.Web.Enabled {
		return
	}
	d.mon = web.NewMonitor()
	d.log = slog.New(d.mon.Handler(d.log.Handler()))
}

// buildWeb constructs channels.web when it is enabled: the rooms, their
// uploads and the dashboard, on one server.
func (d *daemon) buildWeb(env channels.Env) error {
	c := d.cfg.Channels.Web
	if !c.Enabled {
		return nil
	}
	model, notice := "none", ""
	if ms := d.cfg.LLM.UsableModels(); len(ms) > 0 {
		model = ms[0].Provider + "/" + ms[0].Name
	} else {
		notice = "The assistant cannot answer yet: no LLM API key is set. " + d.cfg.LLMSetup()
		d.log.Warn("no LLM model can answer yet; the web pages say what to set", "problem", d.cfg.MissingLLM())
	}
	w, err := web.New(c, env, web.Options{
		DataDir: d.cfg.DataDir, MaxUploadBytes: d.cfg.Media.MaxDownloadBytes,
		Groups: d.groups, Store: d.store, Monitor: d.mon, Model: model, Notice: notice, Out: d.out, Budget: d.budget,
	})
	if err != nil {
		return fail(1, "%v", err)
	}
	d.chans[w.Name()] = w
	return nil
}
