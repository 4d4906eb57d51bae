package agent

import (
	"github.com/botd-dev/botd/llm"
)

// Settings are what may change while botd runs (the config read again on
// SIGHUP or a change of its file): the model chain, a run's limits, the
// conversation's bounds, a group's daily budget, the reaction that marks a
// question seen and the gate of unknown chats. A run takes them once, when
// its group's worker makes it, and keeps them to its end: a reload during a
// run never changes the run.
type Settings struct {
	LLM     llm.Provider
	Run     RunLimits
	Context ContextLimits
	// MaxCostPerDay is IntakeOptions.MaxCostPerDay (micro-cents; 0 is no
	// limit); AckReaction and Gate are IntakeOptions' too.
	MaxCostPerDay int64
	AckReaction   string
	Gate          Gate
}

// settingsOf are the live settings Options start with.
func settingsOf(o Options) Settings {
	return Settings{LLM: o.LLM, Run: o.Run, Context: o.Context, MaxCostPerDay: o.Intake.MaxCostPerDay,
		AckReaction: o.Intake.AckReaction, Gate: o.Intake.Gate}
}

// Settings returns the settings in force: those the next run starts with.
func (a *Agent) Settings() Settings { return *a.live.Load() }

// Apply puts s in force for every run made from now on (and every message
// delivered from now on); a run in flight finishes with the settings it
// started with. Zero limits take their defaults, as in New; a nil LLM
// keeps the chain in force.
func (a *Agent) Apply(s Settings) {
	def := DefaultConfig()
	s.Run = s.Run.withDefaults(def)
	s.Context = s.Context.withDefaults(def)
	if s.LLM == nil {
		s.LLM = a.live.Load().LLM
	}
	a.live.Store(&s)
}

// settings is what a run or a delivery takes at its start.
func (a *Agent) settings() *Settings { return a.live.Load() }
