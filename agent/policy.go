package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
)

// Policy is what a group's own settings and its people's roles make of
// its runs (package chatctl: groups[].model, prompt, tools,
// max_cost_per_day, language, what admins changed from the chat;
// access.owners and groups[].admins). Nil: every run uses the agent's
// settings and every asker may use every tool.
type Policy interface {
	// Run is the group's choices for its next run.
	Run(ctx context.Context, g *groups.Group) GroupRun
	// Role is the role of sender, who wrote in chat, in the group.
	Role(g *groups.Group, chat, sender string) groups.Role
}

// GroupRun is a group's own choices for a run; zero fields take the
// agent's.
type GroupRun struct {
	// LLM and Model are the group's model and its fallbacks; nil and ""
	// are Options.LLM and Options.Run.Model.
	LLM   llm.Provider
	Model string
	// Prompt is the group's persona or standing instructions.
	Prompt string
	// Language is the language answers are written in.
	Language string
	// Tools, when not nil, is the allow-list of tools runs are offered.
	Tools []string
	// MaxCostPerDay (micro-cents) is the group's own daily budget; 0 is
	// IntakeOptions.MaxCostPerDay.
	MaxCostPerDay int64
	// Roles: someone is named owner or admin, so the prompt names the
	// asker's role.
	Roles bool
}

// Gates asks each gate in turn; the first that deals with a message ends
// it (access's pairing, then the chat's commands).
type Gates []Gate

// Intercept implements Gate.
func (gs Gates) Intercept(ctx context.Context, in channels.Inbound, g *groups.Group) bool {
	for _, gt := range gs {
		if gt != nil && gt.Intercept(ctx, in, g) {
			return true
		}
	}
	return false
}

// groupRun is the group's choices for a run over the settings in force
// (set's chain, model and budget where the policy has none).
func (a *Agent) groupRun(ctx context.Context, g *groups.Group, set *Settings) GroupRun {
	var s GroupRun
	if a.opts.Policy != nil {
		s = a.opts.Policy.Run(ctx, g)
	}
	if s.LLM == nil {
		s.LLM, s.Model = set.LLM, set.Run.Model
	}
	if s.MaxCostPerDay <= 0 {
		s.MaxCostPerDay = set.MaxCostPerDay
	}
	return s
}

// role is the role of the asker of a run: the sender of the message
// that triggered it. A scheduled task was planned by someone allowed to
// (an admin); without a policy everyone may do everything.
func (a *Agent) role(g *groups.Group, m *store.Message) groups.Role {
	if a.opts.Policy == nil {
		return groups.Owner
	}
	if m == nil || isTask(m) {
		return groups.Admin
	}
	return a.opts.Policy.Role(g, m.ChatID, m.SenderID)
}

// asker is the message that triggered a run (nil when it is not among
// the run's messages).
func asker(msgs []store.Message, trig store.Trigger) *store.Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].ID == trig.MessageID && msgs[i].ChatID == trig.ChatID {
			return &msgs[i]
		}
	}
	return nil
}

// standing is what the group's settings add to the system prompt.
func standing(s GroupRun) string {
	var b strings.Builder
	if p := strings.TrimSpace(s.Prompt); p != "" {
		b.WriteString("\n\n## This group's standing instructions (set by its admins)\n\n")
		b.WriteString(escaped(p))
	}
	if l := strings.TrimSpace(s.Language); l != "" {
		fmt.Fprintf(&b, "\n\nWrite your answers in %s.", escaped(l))
	}
	return b.String()
}

// askerLine names the asker's role, after the conversation (it changes
// from run to run, so the system prompt stays cached); "" where roles do
// not apply.
func askerLine(s GroupRun, role groups.Role) string {
	if !s.Roles {
		return ""
	}
	return fmt.Sprintf("\n\nThe person asking is the group's %s.", roleWords[role])
}

var roleWords = map[groups.Role]string{
	groups.Member: "member (may ask, fetch, search and read; scheduling and generating need an admin)",
	groups.Admin:  "admin (may also change its settings, schedule tasks and generate media)",
	groups.Owner:  "owner (may do everything)",
}

// permit is the run's tools as the group's allow-list and the asker's
// role make them: a tool off the list is not offered, a call the role
// does not allow is refused with tools.CodeForbidden and a sentence the
// model can pass on.
type permit struct {
	ToolSession
	folder string
	allow  []string // nil: every tool
	role   groups.Role
}

func (p *permit) allowed(name string) bool { return p.allow == nil || slices.Contains(p.allow, name) }

func (p *permit) Tools() []llm.Tool {
	all := p.ToolSession.Tools()
	if p.allow == nil {
		return all
	}
	out := make([]llm.Tool, 0, len(all))
	for _, t := range all {
		if p.allowed(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

func (p *permit) Call(ctx context.Context, name string, args json.RawMessage) (*tools.Result, error) {
	if !p.allowed(name) {
		return tools.ToolFailure(name, tools.CodeForbidden, "this tool is not offered in this group (groups[].tools). Say you cannot do that here."), nil
	}
	if spec, own := tools.Lookup(name); own {
		var a map[string]any
		if len(args) > 0 {
			_ = json.Unmarshal(args, &a) // the tool says what is wrong with bad arguments
		}
		if need := spec.Need(tools.Call{Folder: p.folder, Args: a}); !p.role.Allows(need) {
			return tools.ToolFailure(name, tools.CodeForbidden, fmt.Sprintf("only the group's %ss may do this, and the person asking is a %s. "+
				"Tell them so, and that an %s of the group can ask for it.", need, p.role, need)), nil
		}
	}
	return p.ToolSession.Call(ctx, name, args)
}

// GroupState is what /status shows of a group's work: whether a run is
// in flight and whether more is waiting.
func (a *Agent) GroupState(folder string) (running, queued bool) {
	q := a.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.state[folder]
	if st == nil {
		return false, false
	}
	return st.stop != nil, st.pending || st.timer != nil
}

// SpentToday is what the group's model calls cost today (micro-cents)
// and its day's limit (0: none).
func (a *Agent) SpentToday(ctx context.Context, g *groups.Group) (spent, limit int64, err error) {
	limit = a.groupRun(ctx, g, a.settings()).MaxCostPerDay
	spent, err = a.opts.Store.SpentSince(ctx, g.Folder, a.budget.dayStart())
	return spent, limit, err
}

// StartAfresh makes the group's next run start without the earlier
// conversation (/new); its notes and memory stay.
func (a *Agent) StartAfresh(ctx context.Context, g *groups.Group) error {
	return a.history.db.StartAfresh(ctx, g.Folder, g.ChatIDs(), time.Now())
}
