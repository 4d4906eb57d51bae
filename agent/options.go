package agent

import (
	"log/slog"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/modelview"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
)

// DefaultMaxTries bounds the runs of one failure streak when
// Options.Intake.MaxTries is zero. The other zero fields take the
// section's defaults (DefaultConfig), the one home of agent.* defaults.
const DefaultMaxTries = 5

// Options configures an Agent. Store, Groups, GroupsDir, Channels and LLM
// are required. Each part's settings are a struct of their own, defined
// next to the part (the run's limits in run.go, the conversation's in
// history.go, the intake's in queue.go, batches in batch.go).
type Options struct {
	Store     *store.Store
	Groups    *groups.Set
	GroupsDir string
	// Channels by name ("telegram", ...): answers go to the channel named
	// by the chat id's prefix.
	Channels      map[string]channels.Channel
	LLM           llm.Provider
	AssistantName string
	Log           *slog.Logger

	Run     RunLimits
	Context ContextLimits
	Intake  IntakeOptions
	Batch   BatchOptions
	Time    TimeOptions
	Hooks   Hooks
	// Policy is the groups' own settings and the roles of their people
	// (settings.go); nil is none.
	Policy Policy
	// ToolOptions are the tools a run is offered. Embedded: the tool
	// plumbing (tools.go) reads its fields as a.opts.Media and so on.
	ToolOptions
}

// ToolOptions are the tools a run is offered and how their results reach
// the model.
type ToolOptions struct {
	// Media answers botd's own tools (fetch_media, list_media,
	// send_message, send_media) of a group in-process: the daemon passes
	// the media service's Caller. Nil means no botd tools (unless
	// ToolSource is set).
	Media func(group string) tools.Caller
	// Generate offers botd's generation tools whose models are configured;
	// with Speech, an answer tagged [[audio_as_voice]] is spoken (through
	// Media's speak).
	Generate tools.Generate
	// Internet offers the web tools that are configured (fetch_url,
	// web_search), and the prompt says what the model can do with links.
	Internet tools.Internet
	// Describe describes an image for a model that cannot see one
	// (media.describe); nil means such a model gets a note instead.
	Describe Describe
	// InlineMaxBytes is media.inline_max_bytes for botd's own tools.
	InlineMaxBytes int64
	// Parse is media.parse: the limits of the children that read
	// members' files for botd's own tools.
	Parse box.Limits
	// ExtraMCP are further stdio MCP servers; their allow-listed tools are
	// exposed as "<name>__<tool>".
	ExtraMCP map[string]MCPServer
	// DataDir keeps remote MCP servers' OAuth tokens (data_dir/mcp).
	DataDir string
	// ToolSource replaces the default tool source (tests).
	ToolSource ToolSource
}

// TimeOptions are the agent's clocks.
type TimeOptions struct {
	// Location renders message times and bounds a budget's day; nil means
	// time.Local.
	Location *time.Location
	// Now is the clock of context windows and notes; nil means time.Now.
	Now func() time.Time
	// Clock times what a run shows while it works (typing renewals, the
	// note about a slow tool call, writes of a live answer); nil means the
	// wall clock.
	Clock clock.Clock
}

// Hooks hear what the agent does.
type Hooks struct {
	// RunDone, when set, hears every run the agent records (with its
	// outcome and model calls) once it is saved: botd's metrics.
	RunDone func(store.AgentRun)
	// BeforeOutbox, when set, is called after the model answered and
	// before the answer is written to the outbox; an error aborts the run
	// there (tests: a crash).
	BeforeOutbox func(folder string) error
}

// withDefaults fills the zero fields from DefaultConfig.
func (o Options) withDefaults() Options {
	def := DefaultConfig()
	o.Run = o.Run.withDefaults(def)
	o.Context = o.Context.withDefaults(def)
	o.Intake = o.Intake.withDefaults(def)
	o.Batch = o.Batch.withDefaults()
	if o.Time.Now == nil {
		o.Time.Now = time.Now
	}
	if o.Time.Location == nil {
		o.Time.Location = time.Local
	}
	if o.Time.Clock == nil {
		o.Time.Clock = clock.Real{}
	}
	if o.AssistantName == "" {
		o.AssistantName = DefaultAssistantName
	}
	if o.InlineMaxBytes <= 0 {
		o.InlineMaxBytes = modelview.DefaultInlineMaxBytes
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Channels == nil {
		o.Channels = map[string]channels.Channel{}
	}
	return o
}
