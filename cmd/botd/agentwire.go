package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/agent/llm"
	"github.com/botd-dev/botd/agent/llm/providers"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/mcp"
)

// buildLLM turns llm.model and llm.fallback into one fallback chain.
func buildLLM(cfg *config.Config, log func(llm.Attempt)) (llm.Provider, error) {
	hc := &http.Client{} // adapters bound each stream with their own idle timeout
	built := map[string]llm.Provider{}
	var entries []llm.Entry
	for i, m := range append([]config.Model{cfg.LLM.Model}, cfg.LLM.Fallback...) {
		p, ok := built[m.Provider]
		if !ok {
			pc, found := cfg.LLM.Providers[m.Provider]
			if !found {
				return nil, fmt.Errorf("llm model %d: unknown provider %q", i, m.Provider)
			}
			var err error
			if p, err = providers.NewProvider(pc.Type, m.Provider, pc.APIKey, pc.BaseURL, hc); err != nil {
				return nil, fmt.Errorf("llm provider %s: %w", m.Provider, err)
			}
			built[m.Provider] = p
		}
		attempts := m.MaxAttempts
		if attempts == 0 {
			attempts = 2
		}
		entries = append(entries, llm.Entry{Provider: p, Model: m.Name, MaxAttempts: attempts})
	}
	return llm.NewChain(entries, llm.WithObserver(log))
}

// startAgent builds the agent, which is also the sink every channel
// delivers to.
func (d *daemon) startAgent(ctx context.Context) error {
	chain, err := buildLLM(d.cfg, func(a llm.Attempt) {
		attrs := []any{"provider", a.Provider, "model", a.Model, "outcome", a.Outcome, "try", a.Try, "took", a.Duration}
		if a.Err != nil {
			attrs = append(attrs, "err", a.Err.Error())
		}
		if a.Usage.CostKnown {
			attrs = append(attrs, "cost_microcents", a.Usage.CostMicrocents)
		}
		d.log.Info("llm attempt", attrs...)
	})
	if err != nil {
		return fail(1, "%v", err)
	}
	d.agent = agent.New(agent.Options{
		Store: d.store, Groups: d.groups, GroupsDir: d.cfg.GroupsDir, DataDir: d.cfg.DataDir,
		LLM: chain, Model: d.cfg.LLM.Model.Name, MaxTokens: d.cfg.LLM.Model.MaxTokens,
		MaxConcurrent: d.cfg.Agent.MaxConcurrent, MaxMessages: d.cfg.Agent.MaxMessages,
		MaxIterations: d.cfg.Agent.MaxIterations, RunTimeout: d.cfg.Agent.RunTimeout.D(),
		ContextMessages: contextMessages(d.cfg.Agent.Context.Messages), ContextAge: d.cfg.Agent.Context.MaxAge.D(),
		ContextTokens:  d.cfg.Agent.Context.MaxTokens,
		Media:          func(group string) mcp.Caller { return d.media.Caller(group) },
		InlineMaxBytes: d.cfg.Media.InlineMaxBytes, ExtraMCP: d.cfg.Agent.MCPServers,
		AssistantName: d.cfg.AssistantName, Log: d.log.With("component", "agent"),
	})
	d.sink = d.agent
	return nil
}

func (d *daemon) addChannelsToAgent() error {
	for _, ch := range d.chans {
		if err := d.agent.AddChannel(ch); err != nil {
			return err
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
