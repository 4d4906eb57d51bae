package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/botd-dev/botd/access"
	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/chatctl"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/nokey"
	"github.com/botd-dev/botd/llm/providers"
	"github.com/botd-dev/botd/llm/uploads"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/ops"
	"github.com/botd-dev/botd/scheduler"
)

// llmProviders builds each provider of llm.providers once, on demand.
type llmProviders struct {
	cfg   *config.Config
	hc    *http.Client
	files llm.Files // nil: media always inline

	mu    sync.Mutex
	built map[string]llm.Provider
}

func newLLMProviders(cfg *config.Config, files llm.Files) *llmProviders {
	// Adapters bound each stream with their own idle timeout.
	return &llmProviders{cfg: cfg, hc: &http.Client{}, files: files, built: map[string]llm.Provider{}}
}

// filesAPIs are the built providers that have a files API, by name, for
// the sweep of uploads.
func (l *llmProviders) filesAPIs() map[string]llm.FilesAPI {
	out := map[string]llm.FilesAPI{}
	for name := range l.cfg.LLM.Providers {
		p, err := l.get(name)
		if err != nil {
			continue
		}
		if f, ok := p.(llm.FilesAPI); ok {
			out[name] = f
		}
	}
	return out
}

func (l *llmProviders) get(name string) (llm.Provider, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.built[name]; ok {
		return p, nil
	}
	pc, found := l.cfg.LLM.Providers[name]
	if !found {
		return nil, fmt.Errorf("unknown llm provider %q", name)
	}
	var opts []providers.Option
	if l.files != nil {
		opts = append(opts, providers.WithFiles(l.files))
	}
	if pc.CacheTTL == "1h" {
		opts = append(opts, providers.WithLongCache())
	}
	p, err := providers.NewProvider(pc.Type, name, pc.APIKey, pc.BaseURL, l.hc, opts...)
	if err != nil {
		return nil, fmt.Errorf("llm provider %s: %w", name, err)
	}
	l.built[name] = p
	return p, nil
}

// buildLLM turns llm.model and llm.fallback into one fallback chain, each
// entry with what its model can take: the known-model table, then the
// config's overrides. Entries whose provider has no key are left out;
// with none left, every run answers with what to set (nokey).
func buildLLM(cfg *config.Config, ps *llmProviders, log func(llm.Attempt)) (llm.Provider, error) {
	models := cfg.LLM.UsableModels()
	if len(models) == 0 {
		return nokey.Provider{Message: nokey.Lead + " " + cfg.LLMSetup()}, nil
	}
	var entries []llm.Entry
	for i, m := range models {
		p, err := ps.get(m.Provider)
		if err != nil {
			return nil, fmt.Errorf("llm model %d: %w", i, err)
		}
		attempts := m.MaxAttempts
		if attempts == 0 {
			attempts = 2
		}
		caps := modelCaps(m, p)
		entries = append(entries, llm.Entry{Provider: p, Model: m.Name, MaxAttempts: attempts, Caps: &caps})
	}
	return llm.NewChain(entries, llm.WithObserver(log))
}

func modelCaps(m providers.Model, p llm.Provider) llm.Capabilities {
	caps := llm.CapabilitiesOf(p, m.Name)
	for _, o := range []struct {
		set *bool
		to  *bool
	}{{m.Capabilities.Vision, &caps.Vision}, {m.Capabilities.Audio, &caps.Audio}, {m.Capabilities.Video, &caps.Video}, {m.Capabilities.Documents, &caps.Documents}} {
		if o.set != nil {
			*o.to = *o.set
		}
	}
	return caps
}

// buildDescribe is media.describe, or nil when it is not configured.
func buildDescribe(cfg *config.Config, ps *llmProviders) (agent.Describe, error) {
	d := config.Section[media.Config](cfg).Describe
	if d.Provider == "" {
		return nil, nil
	}
	p, err := ps.get(d.Provider)
	if err != nil {
		return nil, fmt.Errorf("media.describe: %w", err)
	}
	return agent.NewDescribe(p, d.Model), nil
}

// startAgent builds the agent, which is also the sink every channel
// delivers to.
func (d *daemon) startAgent(ctx context.Context) error {
	ac := config.Section[agent.Config](d.cfg)
	mc := config.Section[media.Config](d.cfg)
	var files llm.Files
	if d.cfg.LLM.Files.Upload {
		d.uploads = uploads.New(d.store.DB, uploads.Options{UploadOver: d.cfg.LLM.Files.UploadOverBytes, Keep: d.cfg.LLM.Files.Keep.D(),
			Log: d.log.With("component", "uploads")})
		files = d.uploads
	}
	ps := newLLMProviders(d.cfg, files)
	d.llm = ps
	// The chat's commands, the roles and the groups' own settings
	// (chatctl): the commands are the gate after access's (agentSettings)
	// and reach the agent once it is made.
	policy := &chatctl.Policy{DB: d.store.DB, Access: *config.Section[access.Config](d.cfg), Models: groupModels{cfg: d.cfg, ps: ps, obs: d.logAttempt},
		CheckTool: ac.CheckTool, Log: d.log.With("component", "chatctl")}
	cmds := &chatctl.Commands{Policy: policy, Store: d.store, Channel: d.chanFor, AssistantName: d.cfg.AssistantName,
		Location: d.cfg.Location(), Log: d.log.With("component", "chatctl")}
	d.cmds = cmds
	set, err := d.agentSettings(d.cfg, ps)
	if err != nil {
		return fail(1, "%v", err)
	}
	describe, err := buildDescribe(d.cfg, ps)
	if err != nil {
		return fail(1, "%v", err)
	}
	if describe != nil {
		describe = agent.CachedDescribe(describe, d.store.DB, mc.Describe.Provider+"/"+mc.Describe.Model)
	}
	primary := runModel(d.cfg)
	// Tasks marked batch go through the primary provider's batch API when
	// it has one (Anthropic, OpenAI, Gemini); otherwise they run like any task.
	var batcher llm.Batcher
	if p, err := ps.get(primary.Provider); err == nil && len(d.cfg.LLM.UsableModels()) > 0 {
		if b, ok := p.(llm.Batcher); ok {
			batcher = b
			d.log.Info("scheduled tasks marked batch use the provider's batch API", "provider", primary.Provider, "model", primary.Name)
		} else {
			d.log.Info("scheduled tasks marked batch run at once: the provider has no batch API", "provider", primary.Provider)
		}
	}
	d.agent = agent.New(agent.Options{
		Store: d.store, Groups: d.groups, GroupsDir: d.cfg.GroupsDir, LLM: set.LLM,
		AssistantName: d.cfg.AssistantName, Log: d.log.With("component", "agent"),
		Run: set.Run, Context: set.Context,
		Intake: agent.IntakeOptions{MaxConcurrent: ac.MaxConcurrent, MaxCostPerDay: set.MaxCostPerDay,
			Gate: set.Gate, Admit: cmds.Admit, AckReaction: set.AckReaction},
		Policy: policy,
		Batch:  agent.BatchOptions{API: batcher, Model: primary.Name, Poll: config.Section[scheduler.Config](d.cfg).BatchPoll.D()},
		Time:   agent.TimeOptions{Location: d.cfg.Location()},
		Hooks:  agent.Hooks{RunDone: d.metrics.RunDone},
		ToolOptions: agent.ToolOptions{
			Media: d.caller, Generate: generateTools(d.cfg), Internet: internetTools(d.cfg), Describe: describe,
			InlineMaxBytes: mc.InlineMaxBytes, Parse: mc.Parse.Limits(), ExtraMCP: ac.MCPServers,
			DataDir: d.cfg.DataDir,
		},
	})
	cmds.Agent = d.agent
	d.sink = d.agent
	ag := d.agent
	d.metrics.WatchQueue(func() ops.QueueState {
		running, waiting := ag.Queue()
		return ops.QueueState{Running: running, Waiting: waiting}
	})
	return nil
}

// agentSettings are the agent's settings that cfg decides and a reload
// may change (agent.Settings): the model chain of llm.model and
// llm.fallback over ps's providers, a run's limits, the conversation's,
// the daily budget, the reaction and the gate of access. The one home of
// how the config maps onto them, at start and at every reload.
func (d *daemon) agentSettings(cfg *config.Config, ps *llmProviders) (agent.Settings, error) {
	chain, err := buildLLM(cfg, ps, d.logAttempt)
	if err != nil {
		return agent.Settings{}, err
	}
	primary, ac := runModel(cfg), config.Section[agent.Config](cfg)
	gate := d.newGate()
	gate.Config = *config.Section[access.Config](cfg)
	var gates agent.Gate = gate
	if d.cmds != nil {
		gates = agent.Gates{gate, d.cmds} // then the chat's commands (chatctl)
	}
	return agent.Settings{
		LLM: chain,
		Run: agent.RunLimits{Model: primary.Name, MaxTokens: primary.MaxTokens,
			MaxIterations: ac.MaxIterations, Timeout: ac.RunTimeout.D(), EagerTools: !ac.LazyTools},
		Context: agent.ContextLimits{MaxMessages: ac.MaxMessages, Messages: contextMessages(ac.Context.Messages),
			MaxAge: ac.Context.MaxAge.D(), MaxTokens: ac.Context.MaxTokens},
		MaxCostPerDay: agent.USD(ac.MaxCostPerDay), AckReaction: cfg.AckReaction, Gate: gates,
	}, nil
}

// runModel is the model runs start with: the first whose provider has a
// key.
func runModel(cfg *config.Config) providers.Model {
	primary := cfg.LLM.Model
	if ms := cfg.LLM.UsableModels(); len(ms) > 0 {
		primary = ms[0]
		if primary.MaxTokens == 0 {
			primary.MaxTokens = cfg.LLM.Model.MaxTokens
		}
	}
	return primary
}

// logAttempt logs one call of a model (the chain's observer).
func (d *daemon) logAttempt(a llm.Attempt) {
	attrs := []any{"provider", a.Provider, "model", a.Model, "outcome", a.Outcome, "try", a.Try, "took", a.Duration}
	if a.Reason != "" {
		attrs = append(attrs, "reason", a.Reason)
	}
	if a.Err != nil {
		attrs = append(attrs, "err", a.Err.Error())
	}
	if a.Usage.CostKnown {
		attrs = append(attrs, "cost_microcents", a.Usage.CostMicrocents)
	}
	d.log.Info("llm attempt", attrs...)
}

// llmFiles is the uploads store the providers hand media to, or nil
// (llm.files.upload off: media always inline).
func (d *daemon) llmFiles() llm.Files {
	if d.uploads == nil {
		return nil
	}
	return d.uploads
}

func (d *daemon) addChannelsToAgent() error {
	for _, ch := range d.chans {
		if err := d.agent.AddChannel(ch); err != nil {
			return err
		}
		// A room's Stop button stops its group's run.
		if s, ok := ch.(interface{ SetStopper(func(string) bool) }); ok {
			s.SetStopper(d.agent.StopRun)
		}
	}
	return nil
}

func (d *daemon) waitAgent() {
	if d.agent != nil {
		d.agent.Wait()
	}
}

// contextMessages maps agent.context.messages to the agent's option, where
// zero means the default and a negative number none.
func contextMessages(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
