package chatctl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/store"
)

// Agent is what the commands ask of the running agent.
type Agent interface {
	// StopRun ends the group's run in flight; false when none is.
	StopRun(chat string) bool
	// GroupState is whether a run is in flight and more is waiting.
	GroupState(folder string) (running, queued bool)
	// SpentToday is today's cost of the group's model calls and its
	// limit, in micro-cents (0: none).
	SpentToday(ctx context.Context, g *groups.Group) (spent, limit int64, err error)
	// StartAfresh makes the next run start without the earlier
	// conversation.
	StartAfresh(ctx context.Context, g *groups.Group) error
}

// Command is one command botd answers in a chat without the model.
type Command struct {
	Name, Args, Help string
	// Admin: only an admin may use it with arguments (or at all).
	Admin bool
}

// List is every command, in the order /help shows them and Telegram's
// command menu offers them. /approve and /deny are package access's.
var List = []Command{
	{Name: "help", Help: "what I answer without thinking"},
	{Name: "status", Help: "my model, today's spending, what is running"},
	{Name: "new", Help: "start afresh: my next answer won't see the earlier conversation (notes and memory stay)"},
	{Name: "stop", Help: "stop the answer I'm writing"},
	{Name: "model", Args: "[name]", Help: "show my model; admins can change it (`/model default` goes back)"},
	{Name: "usage", Args: "[7d]", Help: "what my answers cost today, or over the last 7 days"},
	{Name: "approve", Args: "CODE", Help: "owners: let a chat that asked for a pairing code talk to me"},
	{Name: "deny", Args: "CODE", Help: "owners: keep that chat ignored"},
}

// command is a chat's "/name args", after an optional mention ("@Andy
// /status", where a client keeps a leading slash to itself) and with an
// optional "@botname" on the command (Telegram's form in groups).
var command = regexp.MustCompile(`(?is)^\s*(?:@\S+\s+)?/(help|start|status|new|reset|stop|model|usage)(@\S+)?(?:\s+(.*?))?\s*$`)

// Parse picks a command of this package out of text: name lower-cased
// ("start" is "help", "reset" is "new"), args trimmed; named reports a
// command addressed to a bot by name ("/status@some_bot").
func Parse(text string) (name, args string, named, ok bool) {
	if len(text) > 300 {
		return "", "", false, false // a command is short; a long message is a question
	}
	m := command.FindStringSubmatch(text)
	if m == nil {
		return "", "", false, false
	}
	name = strings.ToLower(m[1])
	switch name {
	case "start":
		name = "help"
	case "reset":
		name = "new"
	}
	return name, strings.TrimSpace(m[3]), m[2] != "", true
}

// Commands answers the chat's commands in registered groups; it is one of
// the agent's gates, so a command is neither stored nor sent to the
// model.
type Commands struct {
	Policy *Policy
	Agent  Agent
	Store  *store.Store
	// Channel finds the channel a chat id belongs to.
	Channel       func(chat string) (channels.Channel, bool)
	AssistantName string
	Location      *time.Location
	Log           *slog.Logger

	mu      sync.Mutex
	replies map[string]*window // by chat: command replies this minute
}

// MaxRepliesPerMinute bounds the command replies of one chat: a flood of
// /help costs the network's rate limit nothing past it (the commands are
// still carried out, unanswered; logged once a minute).
const MaxRepliesPerMinute = 20

type window struct {
	start time.Time
	n     int
}

// allow counts a reply to chat; false past MaxRepliesPerMinute.
func (c *Commands) allow(chat string) bool {
	now := c.Policy.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.replies == nil {
		c.replies = map[string]*window{}
	}
	w := c.replies[chat]
	if w == nil || now.Sub(w.start) >= time.Minute {
		if len(c.replies) >= 10_000 { // many chats at once: start over rather than grow
			clear(c.replies)
		}
		w = &window{start: now}
		c.replies[chat] = w
	}
	w.n++
	if w.n == MaxRepliesPerMinute+1 {
		c.Log.Warn("chatctl: too many commands in a chat; not answering them for the rest of the minute", "chat", chat)
	}
	return w.n <= MaxRepliesPerMinute
}

// sendTimeout bounds one reply: it is sent while the channel waits to
// hand over its next message.
const sendTimeout = 15 * time.Second

// Intercept reports whether in was a command (answered here). g is nil
// for a chat no group registers: commands are for groups.
func (c *Commands) Intercept(ctx context.Context, in channels.Inbound, g *groups.Group) bool {
	if g == nil || in.FromMe || in.IsBot || in.Edit {
		return false
	}
	name, args, named, ok := Parse(in.Text)
	if !ok || named && !in.Mentioned {
		return false // another bot's: "/status@other_bot"
	}
	role := c.Policy.Role(g, in.ChatID, in.SenderID)
	c.Log.Info("chatctl: command", "group", g.Folder, "command", name, "sender", groups.UserID(in.ChatID, in.SenderID), "role", role)
	var text string
	switch name {
	case "help":
		text = c.help()
	case "status":
		text = c.status(ctx, g, role)
	case "new":
		if err := c.Agent.StartAfresh(ctx, g); err != nil {
			c.Log.Error("chatctl: /new failed", "group", g.Folder, "err", err)
			text = "Something went wrong on my side; the conversation was not reset."
			break
		}
		text = "Starting afresh: my next answer won't see the earlier conversation. Notes and memory stay."
	case "stop":
		if c.Agent.StopRun(in.ChatID) {
			text = "Stopped."
		} else {
			text = "I'm not writing anything right now."
		}
	case "model":
		text = c.model(ctx, g, in, role, args)
	case "usage":
		text = c.usage(ctx, g, args)
	}
	// Past the chat's bound the command is carried out (an admin's /stop
	// works during someone's flood) but not answered.
	if c.allow(in.ChatID) {
		c.reply(ctx, in, text)
	}
	return true
}

func (c *Commands) help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "I'm %s. Address me with a question to get an answer. These I answer at once:", c.AssistantName)
	for _, cmd := range List {
		b.WriteString("\n/" + cmd.Name)
		if cmd.Args != "" {
			b.WriteString(" " + cmd.Args)
		}
		b.WriteString(" — " + cmd.Help)
	}
	return b.String()
}

func (c *Commands) status(ctx context.Context, g *groups.Group, role groups.Role) string {
	var b strings.Builder
	b.WriteString("Model: " + c.modelLine(ctx, g))
	s := g.Settings
	if tools, source, o := c.Policy.Tools(ctx, g); len(tools) > 0 {
		b.WriteString("\nTools: only " + strings.Join(tools, ", ") + " " + c.source(source, o))
	}
	if s.Language != "" {
		b.WriteString("\nLanguage: " + s.Language + " (from the config)")
	}
	if prompt, source, o := c.Policy.Prompt(ctx, g); prompt != "" && source == "config" {
		b.WriteString("\nStanding instructions: set in the config")
	} else if prompt != "" {
		b.WriteString("\nStanding instructions: " + strings.Trim(c.source(source, o), "()"))
	}
	if len(c.Policy.access().Owners) > 0 || len(s.Admins) > 0 {
		b.WriteString("\nYou are: " + article(role))
	}
	spent, limit, err := c.Agent.SpentToday(ctx, g)
	switch {
	case err != nil:
		c.Log.Error("chatctl: spending unreadable", "group", g.Folder, "err", err)
		b.WriteString("\nSpent today: unknown")
	case limit > 0:
		fmt.Fprintf(&b, "\nSpent today: %s of %s", usd(spent), usd(limit))
	default:
		fmt.Fprintf(&b, "\nSpent today: %s (no daily limit)", usd(spent))
	}
	running, queued := c.Agent.GroupState(g.Folder)
	switch {
	case running && queued:
		b.WriteString("\nNow: writing an answer; more is waiting")
	case running:
		b.WriteString("\nNow: writing an answer (/stop ends it)")
	case queued:
		b.WriteString("\nNow: a question is waiting its turn")
	default:
		b.WriteString("\nNow: idle")
	}
	return b.String()
}

// modelLine is the group's model with its fallbacks and its source.
func (c *Commands) modelLine(ctx context.Context, g *groups.Group) string {
	list, source, o := c.Policy.Model(ctx, g)
	line := strings.Join(list, ", then ")
	if source == "default" {
		return line + " (botd's default)"
	}
	return line + " " + c.source(source, o)
}

// source says where a setting comes from, in brackets: the config, or
// who set it in the chat or on the dashboard, and when.
func (c *Commands) source(source string, o Override) string {
	switch {
	case source == "chat" && o.By == ByDashboard:
		return "(set on the dashboard on " + o.At.In(c.loc()).Format("2 Jan 15:04") + ")"
	case source == "chat":
		return "(set in the chat by " + o.By + " on " + o.At.In(c.loc()).Format("2 Jan 15:04") + ")"
	}
	return "(from the config)"
}

func (c *Commands) model(ctx context.Context, g *groups.Group, in channels.Inbound, role groups.Role, args string) string {
	if args == "" {
		return "Model: " + c.modelLine(ctx, g) + "\nAdmins can change it: /model <provider>/<model>, or /model default."
	}
	if !role.Allows(groups.Admin) {
		return "Only an admin of this group can change its model (groups[].admins in the config)."
	}
	by := groups.UserID(in.ChatID, in.SenderID)
	var no Refusal
	switch err := c.Policy.ChangeModel(ctx, g, args, by); {
	case errors.As(err, &no):
		return "Not changed: " + no.Error()
	case err != nil:
		c.Log.Error("chatctl: /model failed", "group", g.Folder, "err", err)
		return "Something went wrong on my side; the model was not changed."
	case strings.EqualFold(args, "default"):
		return "Model: " + c.modelLine(ctx, g)
	}
	c.Log.Info("chatctl: model changed from the chat", "group", g.Folder, "model", args, "by", by)
	return "Model set: " + c.modelLine(ctx, g)
}

func (c *Commands) usage(ctx context.Context, g *groups.Group, args string) string {
	now := c.Policy.now().In(c.loc())
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	what := "Today"
	switch strings.ToLower(args) {
	case "":
	case "7d", "week":
		since, what = since.AddDate(0, 0, -6), "The last 7 days"
	default:
		return "Usage: /usage for today, /usage 7d for the last 7 days."
	}
	rows, err := c.Store.Usage(ctx, g.Folder, since, c.loc())
	if err != nil {
		c.Log.Error("chatctl: usage unreadable", "group", g.Folder, "err", err)
		return "Something went wrong on my side; try `botd usage` on the server."
	}
	var cost int64
	calls, unpriced := 0, 0
	by := map[string]int64{}
	var models []string
	for _, r := range rows {
		cost += r.CostMicrocents
		calls += r.Attempts
		unpriced += r.Unpriced
		if _, ok := by[r.Model]; !ok {
			models = append(models, r.Model)
		}
		by[r.Model] += r.CostMicrocents
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s over %d model calls", what, usd(cost), calls)
	if unpriced > 0 {
		fmt.Fprintf(&b, " (%d of unknown price)", unpriced)
	}
	for _, m := range models {
		fmt.Fprintf(&b, "\n%s: %s", m, usd(by[m]))
	}
	c.splitLine(ctx, &b, g, since)
	return b.String()
}

// splitLine adds where the runs' input tokens went (store.TokenSplit),
// as botd usage and the dashboard show it; nothing before any split run.
func (c *Commands) splitLine(ctx context.Context, b *strings.Builder, g *groups.Group, since time.Time) {
	rows, err := c.Store.UsageSplit(ctx, g.Folder, since, c.loc())
	if err != nil {
		c.Log.Warn("chatctl: usage split unreadable", "group", g.Folder, "err", err)
		return
	}
	var sum store.TokenSplit
	unsplit := 0
	for _, r := range rows {
		sum.Add(r.Split)
		unsplit += r.Unsplit
	}
	total := sum.Total()
	if total == 0 {
		return
	}
	pct := func(n int64) int64 { return (100*n + total/2) / total }
	fmt.Fprintf(b, "\nInput: %s tokens: fixed prompt %d %%, tools %d %%, conversation %d %%, media %d %%",
		tokens(total), pct(sum.Prompt), pct(sum.Tools), pct(sum.Conversation), pct(sum.Media))
	if unsplit > 0 {
		fmt.Fprintf(b, " (%d earlier runs not counted)", unsplit)
	}
}

// tokens is a token count as people read it: 950, 12.3k, 1.2M.
func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func (c *Commands) loc() *time.Location {
	if c.Location != nil {
		return c.Location
	}
	return time.Local
}

func article(r groups.Role) string {
	if r == groups.Member {
		return "a member"
	}
	return "an " + r.String()
}

// usd is micro-cents (1e-8 USD) as dollars.
func usd(m int64) string { return fmt.Sprintf("$%.4f", float64(m)/1e8) }

func (c *Commands) reply(ctx context.Context, in channels.Inbound, text string) {
	ch, ok := c.Channel(in.ChatID)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if _, err := ch.Send(ctx, channels.OutMessage{Chat: in.ChatID, Text: text, ThreadID: in.ThreadID, ReplyTo: in.ID}); err != nil {
		c.Log.Warn("chatctl: reply not sent", "chat", in.ChatID, "err", err)
	}
}
