// Package ops is botd's health and metrics: a Prometheus registry of its
// own holding botd's series (named botd_…) and the Go runtime's and the
// process's, the few calls the daemon's parts make to move them, and the
// HTTP server of /healthz, /readyz and /metrics at ops.listen.
//
// The parts never import Prometheus: the daemon hands them a method of
// Metrics as a hook (agent.Options.RunDone, media.Options.Meter,
// box.OnKilled) or wraps what they already call (the channels' sink).
// Every label value comes from botd's own code or config (a network's
// name, a run's outcome, a configured model), never from what a chat
// says, so no member can grow the number of series.
package ops

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/store"
)

// Metrics is botd's registry and its series.
type Metrics struct {
	reg *prometheus.Registry

	received         *prometheus.CounterVec
	mediaPosted      *prometheus.CounterVec
	mediaPostedBytes *prometheus.CounterVec
	mediaFetches     *prometheus.CounterVec
	mediaDownloaded  *prometheus.CounterVec
	runs             *prometheus.CounterVec
	runSeconds       prometheus.Histogram
	modelCalls       *prometheus.CounterVec
	modelTokens      *prometheus.CounterVec
	modelCost        *prometheus.CounterVec
	boxKilled        *prometheus.CounterVec

	state *stateCollector
}

// New returns botd's metrics, registered with a registry of their own
// (never the global one: two daemons in one test binary must not share
// counters) together with the Go runtime and process collectors.
func New() *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		reg:              prometheus.NewRegistry(),
		received:         counter("botd_messages_received_total", "Messages the channels handed to botd and botd stored, by network (edits not counted).", "network"),
		mediaPosted:      counter("botd_media_posted_total", "Media files posted in registered chats (refs registered), by network.", "network"),
		mediaPostedBytes: counter("botd_media_posted_bytes_total", "Bytes of the media posted in registered chats, as their networks declared them, by network.", "network"),
		mediaFetches:     counter("botd_media_fetches_total", "fetch_media calls (not those refused as unknown or expired) by the media's network and result (cached, downloaded, failed).", "network", "result"),
		mediaDownloaded:  counter("botd_media_downloaded_bytes_total", "Bytes botd downloaded for media it was asked for, by network (link: web pages).", "network"),
		runs:             counter("botd_runs_total", "Agent runs by how they ended (answered, model_failed, timeout, iteration_limit, stopped, stopped_by_user, batched, aborted).", "outcome"),
		runSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "botd_run_duration_seconds",
			Help: "How long agent runs took, from start to their answer being queued.", Buckets: []float64{0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640}}),
		modelCalls:  counter("botd_model_calls_total", "Model calls by provider, model and outcome (succeeded, failed), counted when their run ends.", "provider", "model", "outcome"),
		modelTokens: counter("botd_model_tokens_total", "Tokens of model calls by provider, model and kind (input, output, cache_read, cache_write).", "provider", "model", "kind"),
		modelCost:   counter("botd_model_cost_usd_total", "What model calls cost in USD, by provider and model; calls of unpriced models are not in it.", "provider", "model"),
		boxKilled:   counter("botd_box_children_killed_total", "Children reading members' files that were stopped, by reason (memory, cpu, timeout, output, cancelled).", "reason"),
		state:       newStateCollector(),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.received, m.mediaPosted, m.mediaPostedBytes, m.mediaFetches, m.mediaDownloaded,
		m.runs, m.runSeconds, m.modelCalls, m.modelTokens, m.modelCost, m.boxKilled, m.state,
	)
	return m
}

// Registry is what /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Sink returns s counting every message it stored, and the media it
// carried, by network: counted on the consumer's side, once the message
// is stored, so a delivery a channel retries is counted once.
func (m *Metrics) Sink(s channels.Sink) channels.Sink { return countingSink{Sink: s, m: m} }

type countingSink struct {
	channels.Sink
	m *Metrics
}

func (s countingSink) Deliver(ctx context.Context, in channels.Inbound) error {
	err := s.Sink.Deliver(ctx, in)
	if err == nil && !in.Edit {
		s.m.received1(in)
	}
	return err
}

func (m *Metrics) received1(in channels.Inbound) {
	network := store.Channel(in.ChatID)
	m.received.WithLabelValues(network).Inc()
	if len(in.Refs) == 0 {
		return
	}
	var bytes int64
	for _, r := range in.Refs {
		if r.Size > 0 {
			bytes += r.Size
		}
	}
	m.mediaPosted.WithLabelValues(network).Add(float64(len(in.Refs)))
	m.mediaPostedBytes.WithLabelValues(network).Add(float64(bytes))
}

// Media fetch results.
const (
	FetchCached     = "cached"
	FetchDownloaded = "downloaded"
	FetchFailed     = "failed"
)

// MediaFetched counts one fetch_media call of a ref of network.
func (m *Metrics) MediaFetched(network, result string) {
	m.mediaFetches.WithLabelValues(network, result).Inc()
}

// MediaDownloaded counts bytes downloaded for a ref of network.
func (m *Metrics) MediaDownloaded(network string, bytes int64) {
	if bytes > 0 {
		m.mediaDownloaded.WithLabelValues(network).Add(float64(bytes))
	}
}

// RunDone counts a finished agent run and its model calls, from the
// record the agent saves (its bill): one place for both, so the metrics
// and the dashboard's usage agree.
func (m *Metrics) RunDone(r store.AgentRun) {
	outcome := r.Outcome
	if outcome == "" {
		outcome = "none"
	}
	m.runs.WithLabelValues(outcome).Inc()
	if !r.Started.IsZero() && r.Finished.After(r.Started) {
		m.runSeconds.Observe(r.Finished.Sub(r.Started).Seconds())
	}
	for _, a := range r.Attempts {
		m.modelCalls.WithLabelValues(a.Provider, a.Model, a.Outcome).Inc()
		for _, t := range [...]struct {
			kind string
			n    int64
		}{{"input", a.Input}, {"output", a.Output}, {"cache_read", a.CacheRead}, {"cache_write", a.CacheWrite}} {
			if t.n > 0 {
				m.modelTokens.WithLabelValues(a.Provider, a.Model, t.kind).Add(float64(t.n))
			}
		}
		if a.CostKnown && a.CostMicrocents > 0 {
			// Micro-cents are 1e-8 USD.
			m.modelCost.WithLabelValues(a.Provider, a.Model).Add(float64(a.CostMicrocents) / 1e8)
		}
	}
}

// BoxKilled counts a child stopped for reason.
func (m *Metrics) BoxKilled(reason string) { m.boxKilled.WithLabelValues(reason).Inc() }

// LeaseState is this instance's side of botd's lease.
type LeaseState struct {
	Active bool
	Epoch  int64
}

// ChannelState is whether one channel is connected.
type ChannelState struct {
	Name      string
	Connected bool
}

// QueueState is the agent's work: runs in flight and groups waiting for
// a run slot (agent.max_concurrent).
type QueueState struct {
	Running, Waiting int
}

// WatchLease, WatchChannels and WatchQueue give the functions read at
// each scrape for the gauges; until one is given (a standby has no
// agent), its gauges are left out.
func (m *Metrics) WatchLease(fn func() LeaseState)        { m.state.lease.Store(&fn) }
func (m *Metrics) WatchChannels(fn func() []ChannelState) { m.state.channels.Store(&fn) }
func (m *Metrics) WatchQueue(fn func() QueueState)        { m.state.queue.Store(&fn) }

// stateCollector reads the gauges when scraped: nothing on a hot path
// keeps them up to date.
type stateCollector struct {
	lease    atomic.Pointer[func() LeaseState]
	channels atomic.Pointer[func() []ChannelState]
	queue    atomic.Pointer[func() QueueState]

	leaseActive, leaseEpoch, connected, running, waiting *prometheus.Desc
}

func newStateCollector() *stateCollector {
	return &stateCollector{
		leaseActive: prometheus.NewDesc("botd_lease_active", "1 while this instance holds botd's lease and answers, 0 while it stands by.", nil, nil),
		leaseEpoch:  prometheus.NewDesc("botd_lease_epoch", "The epoch of the lease as this instance last read it (it grows at each takeover).", nil, nil),
		connected:   prometheus.NewDesc("botd_channel_connected", "1 while a channel is connected (running), 0 while it starts, failed or stopped.", []string{"channel"}, nil),
		running:     prometheus.NewDesc("botd_agent_runs_in_flight", "Agent runs in flight.", nil, nil),
		waiting:     prometheus.NewDesc("botd_agent_queue_depth", "Groups with work waiting for a run slot (agent.max_concurrent).", nil, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leaseActive, c.leaseEpoch, c.connected, c.running, c.waiting} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if fn := c.lease.Load(); fn != nil {
		l := (*fn)()
		ch <- prometheus.MustNewConstMetric(c.leaseActive, prometheus.GaugeValue, b2f(l.Active))
		ch <- prometheus.MustNewConstMetric(c.leaseEpoch, prometheus.GaugeValue, float64(l.Epoch))
	}
	if fn := c.channels.Load(); fn != nil {
		for _, s := range (*fn)() {
			ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, b2f(s.Connected), s.Name)
		}
	}
	if fn := c.queue.Load(); fn != nil {
		q := (*fn)()
		ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(q.Running))
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(q.Waiting))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
