package web

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

const (
	// dashRuns is how many runs a page of the dashboard lists.
	dashRuns = 20
	// chartDays is how far back the charts go, today included.
	chartDays = 14
)

// dashBody is the body of the dashboard.
type dashBody struct {
	Model      string
	Tiles      []tile
	Channels   []channelRow
	Groups     []groupRow
	Rooms      []string
	Links      []linkRow
	Runs       []runRow
	RunsErr    string
	LinksErr   string
	Filter     runFilter
	Folders    []string
	Outcomes   []string
	Web        []webRow
	CostChart  chart
	BytesChart chart
	// Split is where each group's input tokens went today (UTC);
	// SplitErr why it could not be read.
	Split    []splitRow
	SplitErr string
	// Instance is the lease's view (nil: one instance).
	Instance *instanceRow
	// LeaseTrouble is why the lease is not being renewed, and since when.
	LeaseTrouble, LeaseTroubleSince string
	// Intake is set while the store refuses what the channels receive,
	// or messages are still held.
	Intake *intakeRow
	// Pending are the chats waiting for approval; PendingOn says the
	// daemon pairs at all.
	Pending    []PendingChat
	PendingOn  bool
	PendingErr string
	// Deciding: the list has approve and deny buttons.
	Deciding bool
	// Settings are each group's settings (nil: Options.Settings unset);
	// Setting: they have forms to change them.
	Settings []settingsRow
	Setting  bool
}

// GroupSetting is one of a group's settings as the dashboard shows it.
type GroupSetting struct {
	Name, Value string
	// Source is where Value comes from: "config", "default",
	// "dashboard" or "chat: <who>, <when>".
	Source string
	// Changeable: the dashboard may change it; Overridden: an override
	// kept in the database is in force, which "reset" removes.
	Changeable, Overridden bool
}

// settingsRow is one group's settings.
type settingsRow struct {
	Folder   string
	Settings []GroupSetting
	Err      string
}

// PendingChat is a chat waiting for approval with its pairing code.
type PendingChat struct {
	Code, Chat, Name, Kind, By string
	Asked                      time.Time
	// AskedText is Asked as the dashboard shows it.
	AskedText string
}

// intakeRow says that the store refuses messages and how many wait.
type intakeRow struct {
	SinceText, At, Error string
	Held                 int
	ByChannel            string // "telegram 2, slack 1"
}

func intakeOf(now time.Time, st channels.InboxStatus) *intakeRow {
	if st.FailingSince.IsZero() && st.Waiting() == 0 {
		return nil
	}
	row := &intakeRow{Error: trimTo(st.LastError, 300), Held: st.Waiting()}
	if !st.FailingSince.IsZero() {
		row.SinceText, row.At = ago(now, st.FailingSince), st.FailingSince.Local().Format("Jan 2 15:04:05")
	}
	names := make([]string, 0, len(st.Held))
	for c := range st.Held {
		names = append(names, c)
	}
	sort.Strings(names)
	for i, c := range names {
		if i > 0 {
			row.ByChannel += ", "
		}
		row.ByChannel += c + " " + strconv.Itoa(st.Held[c])
	}
	return row
}

// instanceRow says which instance is active and what this one does.
type instanceRow struct {
	LeaseView
	Role, SinceText string
}

type tile struct{ Big, Small string }

type channelRow struct {
	ChannelState
	SinceText, LastEventText, LastErrorText string
	// Setup, for a network the config leaves off, is how to turn it on.
	Setup string
}

type groupRow struct {
	Folder, Name, Chat, Trigger, Room string
	Disabled                          string // why its folder was refused at start
	// Off names the group's network when the config leaves it off: the
	// group cannot hear anything (the example's placeholder groups).
	Off    string
	Main   bool
	Media  mediaregistry.Stats
	Saving string
	// Ratio is downloaded against posted, in percent, for the meter.
	Ratio int
}

type linkRow struct {
	Link
	URL string
}

// webRow is one fetch_url or web_search.
type webRow struct {
	At, Folder, Tool, Host, Bytes, Outcome, Error string
}

// dashWeb is how many web requests the dashboard lists.
const dashWeb = 30

type runRow struct {
	ID, Started, Folder, Trigger, Duration, Model, Tokens, Cost, Tools, Outcome, Error string
	Fetches                                                                            int
	// Split is where the run's input tokens went, "—" for a run
	// recorded before botd split them.
	Split string
}

// splitRow is where one group's input tokens went today: each part
// with its share, "—" when none of its runs has a split.
type splitRow struct {
	Folder, Runs, Input, Prompt, Tools, Conversation, Media string
}

func splitView(r store.SplitRow) splitRow {
	v := splitRow{Folder: r.Folder, Runs: strconv.Itoa(r.Runs), Input: "—", Prompt: "—", Tools: "—", Conversation: "—", Media: "—"}
	if r.Unsplit > 0 {
		v.Runs += fmt.Sprintf(" (%d not split)", r.Unsplit)
	}
	if r.Unsplit < r.Runs {
		v.Input = strconv.FormatInt(r.Input, 10)
		v.Prompt, v.Tools = tokenShare(r.Split.Prompt, r.Input), tokenShare(r.Split.Tools, r.Input)
		v.Conversation, v.Media = tokenShare(r.Split.Conversation, r.Input), tokenShare(r.Split.Media, r.Input)
	}
	return v
}

// tokenShare is n tokens and their share of all: "1200 (31%)".
func tokenShare(n, all int64) string {
	if all <= 0 {
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprintf("%d (%d%%)", n, (n*100+all/2)/all)
}

// splitText is a run's split in words: "prompt 1200 · tools 2600 ·
// conversation 310 · media 1590".
func splitText(s *store.TokenSplit) string {
	if s == nil {
		return "—"
	}
	return fmt.Sprintf("prompt %d · tools %d · conversation %d · media %d", s.Prompt, s.Tools, s.Conversation, s.Media)
}

// runFilter is the dashboard's choice of runs, from its query string.
type runFilter struct {
	Group, Outcome string
	Page           int // from 1
	More           bool
}

// Query is the filter as a query string, on page n.
func (f runFilter) Query(n int) template.URL {
	v := url.Values{}
	if f.Group != "" {
		v.Set("group", f.Group)
	}
	if f.Outcome != "" {
		v.Set("outcome", f.Outcome)
	}
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	if len(v) == 0 {
		return ""
	}
	return template.URL("?" + v.Encode())
}

func (f runFilter) Prev() int { return f.Page - 1 }
func (f runFilter) Next() int { return f.Page + 1 }

func filterOf(r *http.Request) runFilter {
	q := r.URL.Query()
	f := runFilter{Group: q.Get("group"), Outcome: q.Get("outcome")}
	f.Page, _ = strconv.Atoi(q.Get("page"))
	f.Page = min(max(f.Page, 1), 10000)
	return f
}

// adminSession answers a request without an admin session (the login
// for a page, 401 or 403) and returns nil then.
func (w *Web) adminSession(rw http.ResponseWriter, r *http.Request, isPage bool) *session {
	s := w.auth.session(r)
	switch {
	case s == nil && isPage:
		http.Redirect(rw, r, "/login", http.StatusSeeOther)
		return nil
	case s == nil:
		w.fail(rw, r, http.StatusUnauthorized, "log in first")
		return nil
	case !s.Admin():
		w.fail(rw, r, http.StatusForbidden, "the dashboard is for the admin")
		return nil
	}
	return s
}

// dashboard is the admin's view of the daemon: channels, groups, runs,
// media and what the laziness saved, as of this request.
func (w *Web) dashboard(rw http.ResponseWriter, r *http.Request) {
	s := w.adminSession(rw, r, true)
	if s == nil {
		return
	}
	p := w.page("Dashboard", s, "")
	p.Body = w.dashData(r.Context(), "http://"+r.Host, filterOf(r))
	w.render(rw, http.StatusOK, "admin.html", p)
}

// dashboardLive is the dashboard's parts that change, which its script
// fetches every few seconds and swaps in without reloading the page.
func (w *Web) dashboardLive(rw http.ResponseWriter, r *http.Request) {
	s := w.adminSession(rw, r, false)
	if s == nil {
		return
	}
	p := w.page("Dashboard", s, "")
	p.Body = w.dashData(r.Context(), "http://"+r.Host, filterOf(r))
	w.render(rw, http.StatusOK, "dashlive", p)
}

func (w *Web) dashData(ctx context.Context, base string, f runFilter) dashBody {
	now := w.now()
	b := dashBody{Model: w.o.Model, Rooms: w.order, Filter: f}
	if b.Model == "" {
		b.Model = "none"
	}
	if w.o.Lease != nil {
		v := w.o.Lease()
		row := &instanceRow{LeaseView: v, Role: "active", SinceText: ago(now, v.Since)}
		if w.o.Standby {
			row.Role = "standing by"
		}
		b.Instance = row
	}
	if w.o.LeaseTrouble != nil {
		if p, since := w.o.LeaseTrouble(); p != "" {
			b.LeaseTrouble, b.LeaseTroubleSince = p, ago(now, since)
		}
	}
	b.Intake = intakeOf(now, w.o.Monitor.Inbox())
	b.Channels = w.channelRows(now)
	var total mediaregistry.Stats
	for _, g := range w.o.Groups.All() {
		row := groupRow{Folder: g.Folder, Name: g.Name, Chat: g.Chat, Trigger: g.Trigger, Main: g.Main}
		row.Disabled, _ = w.o.Groups.Disabled(g.Folder)
		if net, _, _ := strings.Cut(g.Chat, ":"); w.o.Networks != nil && !w.o.Networks[net] {
			row.Off = net
		}
		b.Folders = append(b.Folders, g.Folder)
		if room, ok := RoomOf(g.Chat); ok && w.rooms[room] != nil {
			row.Room = room
		}
		switch {
		case !g.RequiresTrigger:
			row.Trigger = "every message"
		case row.Trigger == "":
			row.Trigger = "@" + w.env.AssistantName
		}
		if st, err := w.env.Registry.Stats(ctx, g); err == nil {
			row.Media = st
			row.Saving, row.Ratio = saving(st)
			total.Refs += st.Refs
			total.Fetched += st.Fetched
			total.Posted += st.Posted
			total.Downloaded += st.Downloaded
		}
		b.Groups = append(b.Groups, row)
	}
	if w.o.Pending != nil {
		b.PendingOn, b.Deciding = true, w.o.Decide != nil
		pending, err := w.o.Pending(ctx)
		if err != nil {
			b.PendingErr = err.Error()
		}
		for _, p := range pending {
			p.AskedText = ago(now, p.Asked)
			b.Pending = append(b.Pending, p)
		}
	}
	if w.o.Settings != nil {
		b.Setting = w.o.SetSetting != nil
		for _, g := range w.o.Groups.All() {
			row := settingsRow{Folder: g.Folder}
			set, err := w.o.Settings(ctx, g.Folder)
			if err != nil {
				row.Err = err.Error()
			}
			row.Settings = set
			b.Settings = append(b.Settings, row)
		}
	}
	links, err := w.auth.Links(ctx)
	if err != nil {
		b.LinksErr = err.Error()
	}
	for _, l := range links {
		b.Links = append(b.Links, linkRow{Link: l, URL: base + "/join#link=" + l.Token})
	}

	since := startOfDay(now).AddDate(0, 0, -(chartDays - 1))
	var costTotal int64
	costUnknown, runsToday := 0, 0
	if w.o.Store != nil {
		runs, err := w.o.Store.FindRuns(ctx, store.RunFilter{Folder: f.Group, Outcome: f.Outcome,
			Limit: dashRuns + 1, Offset: (f.Page - 1) * dashRuns})
		if err != nil {
			b.RunsErr = err.Error()
		}
		if len(runs) > dashRuns {
			runs, b.Filter.More = runs[:dashRuns], true
		}
		for _, run := range runs {
			b.Runs = append(b.Runs, runView(run))
		}
		b.Outcomes, _ = w.o.Store.RunOutcomes(ctx)
		if reqs, err := w.o.Store.RecentWebRequests(ctx, dashWeb); err == nil {
			for _, r := range reqs {
				row := webRow{At: r.At.Local().Format("Jan 2 15:04:05"), Folder: r.Folder, Tool: r.Tool, Host: r.Host,
					Outcome: r.Outcome, Error: trimTo(r.Error, 200)}
				if r.Bytes > 0 {
					row.Bytes = mediaregistry.FormatSize(r.Bytes)
				}
				b.Web = append(b.Web, row)
			}
		}
		splits, err := w.o.Store.UsageSplit(ctx, "", startOfDay(now), time.UTC)
		if err != nil {
			b.SplitErr = err.Error()
		}
		for _, sp := range splits {
			b.Split = append(b.Split, splitView(sp))
		}
		days, err := w.o.Store.DailyRuns(ctx, since)
		if err == nil {
			b.CostChart = costChart(since, days)
			for _, d := range days {
				costTotal += d.CostMicrocents
				costUnknown += d.CostUnknown
				if d.Day.Equal(startOfDay(now)) {
					runsToday = d.Runs
				}
			}
		}
	}
	if days, err := w.env.Registry.Daily(ctx, since); err == nil {
		b.BytesChart = bytesChart(since, days)
	}
	sv, _ := saving(total)
	b.Tiles = []tile{
		{Big: fmt.Sprint(runsToday), Small: "times the assistant worked today (UTC)"},
		costTile(costTotal, costUnknown),
		{Big: fmt.Sprintf("%d / %d", total.Fetched, total.Refs), Small: "attachments opened by the assistant / shared"},
		{Big: mediaregistry.FormatSize(total.Downloaded) + " / " + mediaregistry.FormatSize(total.Posted), Small: "data downloaded / shared in the chats"},
		{Big: sv, Small: "of the data shared was not downloaded, because nobody asked about it"},
	}
	return b
}

// costTile is the cost of the charts' days: "unknown" when runs of a
// model without a price are all there is, and marked when they are part.
func costTile(known int64, unknownRuns int) tile {
	t := tile{Big: dollars(known, true), Small: fmt.Sprintf("cost, last %d days", chartDays)}
	switch {
	case unknownRuns > 0 && known == 0:
		t.Big = dollars(0, false)
		t.Small += fmt.Sprintf(": %d run%s on models without a price", unknownRuns, plural(unknownRuns))
	case unknownRuns > 0:
		t.Big += " + unknown"
		t.Small += fmt.Sprintf(", and %d run%s on models without a price", unknownRuns, plural(unknownRuns))
	}
	return t
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// channelRows is every network botd has, in name order: those that
// report a state with it, those the config leaves off with how to turn
// them on, those on and not reporting yet as starting.
func (w *Web) channelRows(now time.Time) []channelRow {
	states := map[string]ChannelState{}
	var out []channelRow
	row := func(st ChannelState) channelRow {
		return channelRow{ChannelState: st, SinceText: ago(now, st.Since), LastEventText: ago(now, st.LastEvent),
			LastErrorText: ago(now, st.LastErrorAt)}
	}
	for _, st := range w.o.Monitor.States() {
		states[st.Name] = st
	}
	if w.o.Networks == nil {
		for _, st := range w.o.Monitor.States() {
			out = append(out, row(st))
		}
		return out
	}
	for _, n := range channels.Networks() {
		st, ok := states[n.Name]
		delete(states, n.Name)
		switch {
		case ok:
			out = append(out, row(st))
		case n.Name == Name || w.o.Networks[n.Name]:
			// On, and not heard from yet (this page is served by web).
			r := row(ChannelState{Name: n.Name, State: "starting"})
			if n.Name == Name {
				r.State = "running"
			}
			out = append(out, r)
		default:
			out = append(out, channelRow{ChannelState: ChannelState{Name: n.Name, State: "off"}, Setup: n.Setup})
		}
	}
	for _, st := range w.o.Monitor.States() {
		if _, left := states[st.Name]; left {
			out = append(out, row(st))
		}
	}
	return out
}

// withNames is a message as the dashboard quotes it: each attachment's
// placeholder replaced by its name (or kind) in brackets, the text kept.
func withNames(text string) string {
	ps := mediaregistry.Parse(text)
	if len(ps) == 0 {
		return text
	}
	var b strings.Builder
	at := 0
	for _, p := range ps {
		b.WriteString(text[at:p.Start])
		name := p.Name
		if name == "" {
			name = strings.ToLower(string(p.Kind))
		}
		b.WriteString("[" + name + "]")
		at = p.End
	}
	b.WriteString(text[at:])
	return b.String()
}

func runView(r store.RunSummary) runRow {
	v := runRow{ID: r.ID, Started: r.Started.Local().Format("Jan 2 15:04:05"), Folder: r.Folder, Outcome: outcomeText(r), Model: r.Model,
		Tokens: fmt.Sprintf("%d in / %d out", r.InputTokens, r.OutputTokens), Cost: dollars(r.CostMicrocents, r.CostKnown),
		Error: trimTo(r.Error, 200), Split: splitText(r.Split)}
	if !r.Finished.IsZero() && r.Finished.After(r.Started) {
		v.Duration = r.Finished.Sub(r.Started).Round(time.Millisecond).String()
	}
	if r.TriggerText != "" || r.TriggerSender != "" {
		v.Trigger = trimTo(strings.Join(strings.Fields(r.TriggerSender+": "+withNames(r.TriggerText)), " "), 90)
	}
	counts := map[string]int{}
	var order []string
	for _, t := range r.Tools {
		if counts[t] == 0 {
			order = append(order, t)
		}
		counts[t]++
	}
	var parts []string
	for _, t := range order {
		if counts[t] > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%d", t, counts[t]))
		} else {
			parts = append(parts, t)
		}
	}
	v.Tools = strings.Join(parts, ", ")
	v.Fetches = counts["fetch_media"] + counts["fetch_url"]
	return v
}

// outcomeText is a run's outcome as the dashboard says it: a run that
// "answered" without a model answered with botd's notice that no model
// is set, not with a model's answer.
func outcomeText(r store.RunSummary) string {
	if r.Outcome == "answered" && r.Model == "" {
		return "no model configured"
	}
	return r.Outcome
}

// saving is the share of posted bytes never downloaded.
func saving(s mediaregistry.Stats) (string, int) {
	if s.Posted <= 0 {
		return "—", 0
	}
	ratio := float64(s.Downloaded) / float64(s.Posted)
	pct := int(ratio*100 + 0.5)
	if pct > 100 {
		pct = 100
	}
	return fmt.Sprintf("%.1f%%", max(0, 100*(1-ratio))), pct
}

// dollars formats micro-cents (1e-8 USD).
func dollars(mc int64, known bool) string {
	if !known {
		return "unknown"
	}
	d := float64(mc) / 1e8
	switch {
	case d == 0:
		return "$0"
	case d < 0.01:
		return fmt.Sprintf("$%.4f", d)
	default:
		return fmt.Sprintf("$%.2f", d)
	}
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
}

func startOfDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// createLink makes a room link (admin only).
func (w *Web) createLink(rw http.ResponseWriter, r *http.Request) {
	s := w.adminPost(rw, r)
	if s == nil {
		return
	}
	room := r.PostFormValue("room")
	if w.rooms[room] == nil {
		w.fail(rw, r, http.StatusBadRequest, "no such room")
		return
	}
	l, err := w.auth.createLink(r.Context(), room)
	if err != nil {
		w.fail(rw, r, http.StatusInternalServerError, err.Error())
		return
	}
	w.log.Info("web room link created", "room", room, "link", l.ID)
	http.Redirect(rw, r, "/admin#links", http.StatusSeeOther)
}

// revokeLink removes a room link; whoever came in through it is out at
// their next request.
func (w *Web) revokeLink(rw http.ResponseWriter, r *http.Request) {
	s := w.adminPost(rw, r)
	if s == nil {
		return
	}
	id := r.PathValue("id")
	found, err := w.auth.revokeLink(r.Context(), id)
	switch {
	case err != nil:
		w.fail(rw, r, http.StatusInternalServerError, err.Error())
		return
	case !found:
		w.fail(rw, r, http.StatusNotFound, "no such link")
		return
	}
	w.log.Info("web room link revoked", "link", id)
	http.Redirect(rw, r, "/admin#links", http.StatusSeeOther)
}

// setSetting changes a group's setting (or, with reset, puts the
// config's back) from the dashboard's settings form.
func (w *Web) setSetting(rw http.ResponseWriter, r *http.Request) {
	s := w.adminPost(rw, r)
	if s == nil {
		return
	}
	if w.o.SetSetting == nil {
		w.fail(rw, r, http.StatusNotFound, "the settings cannot be changed here")
		return
	}
	folder, name, value := r.PostFormValue("group"), r.PostFormValue("name"), r.PostFormValue("value")
	if _, ok := w.o.Groups.ByFolder(folder); !ok {
		w.fail(rw, r, http.StatusNotFound, "no such group")
		return
	}
	if r.PostFormValue("reset") != "" {
		value = ""
	} else if strings.TrimSpace(value) == "" {
		w.fail(rw, r, http.StatusBadRequest, "Not changed: give a value, or reset to the config's.")
		return
	}
	refused, err := w.o.SetSetting(r.Context(), folder, name, value)
	switch {
	case err != nil:
		w.log.Error("web: a group setting was not changed", "group", folder, "setting", name, "err", err)
		w.fail(rw, r, http.StatusInternalServerError, "something went wrong; the setting was not changed")
		return
	case refused != "":
		w.fail(rw, r, http.StatusBadRequest, "Not changed: "+refused)
		return
	}
	w.log.Info("web: group setting changed on the dashboard", "group", folder, "setting", name, "reset", value == "")
	http.Redirect(rw, r, "/admin#settings-"+url.PathEscape(folder), http.StatusSeeOther)
}

// adminPost checks a dashboard form: an admin session and its CSRF token.
func (w *Web) adminPost(rw http.ResponseWriter, r *http.Request) *session {
	// A group's standing instructions (groups.MaxPrompt, 4000 bytes) may
	// triple when form-encoded.
	r.Body = http.MaxBytesReader(rw, r.Body, 16<<10)
	s := w.auth.session(r)
	switch {
	case s == nil:
		w.fail(rw, r, http.StatusUnauthorized, "log in first")
		return nil
	case !s.Admin():
		w.fail(rw, r, http.StatusForbidden, "the dashboard is for the admin")
		return nil
	case !w.auth.checkCSRF(r, s):
		w.fail(rw, r, http.StatusForbidden, "missing or wrong CSRF token; reload the page")
		return nil
	}
	return s
}

// chart is a bar chart drawn server-side as inline SVG.
type chart struct {
	W, H   int
	Bars   []bar
	Labels []label
	Top    string // the value of the top line
	Empty  bool
	Legend []legend
}

type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type label struct {
	X, Y float64
	Text string
}

type legend struct{ Class, Text string }

const (
	chartW, chartH             = 560, 200
	padLeft, padBottom         = 8, 22
	padTop                     = 18
	plotW, plotH               = chartW - 2*padLeft, chartH - padTop - padBottom
	slotW              float64 = float64(plotW) / chartDays
)

// series lays out one bar per day and series, the tallest value at the
// top line.
func layout(since time.Time, series [][chartDays]float64, classes []string, titles func(day time.Time, s int, v float64) string) chart {
	c := chart{W: chartW, H: chartH}
	top := 0.0
	for _, s := range series {
		for _, v := range s {
			top = max(top, v)
		}
	}
	c.Empty = top == 0
	if top == 0 {
		top = 1
	}
	n := float64(len(series))
	barW := (slotW - 4) / n
	for d := 0; d < chartDays; d++ {
		day := since.AddDate(0, 0, d)
		x0 := float64(padLeft) + float64(d)*slotW + 2
		for i, s := range series {
			h := s[d] / top * plotH
			if s[d] > 0 && h < 1 {
				h = 1 // something happened: let it show
			}
			c.Bars = append(c.Bars, bar{X: x0 + float64(i)*barW, Y: padTop + plotH - h, W: barW - 1, H: h,
				Class: classes[i], Title: titles(day, i, s[d])})
		}
		if (chartDays-1-d)%2 == 0 { // every other day, today included
			c.Labels = append(c.Labels, label{X: x0, Y: chartH - 6, Text: day.Format("Jan 2")})
		}
	}
	return c
}

func costChart(since time.Time, days []store.DayRuns) chart {
	var cost [chartDays]float64
	runs := map[int]store.DayRuns{}
	for _, d := range days {
		i := int(d.Day.Sub(since).Hours() / 24)
		if i >= 0 && i < chartDays {
			cost[i] = float64(d.CostMicrocents)
			runs[i] = d
		}
	}
	c := layout(since, [][chartDays]float64{cost}, []string{"bar"}, func(day time.Time, _ int, v float64) string {
		d := runs[int(day.Sub(since).Hours()/24)]
		t := fmt.Sprintf("%s: %s, %d runs, %d in / %d out tokens", day.Format("Jan 2"), dollars(int64(v), true), d.Runs, d.InputTokens, d.OutputTokens)
		if d.CostUnknown > 0 {
			t += fmt.Sprintf(" (%d runs of unpriced models)", d.CostUnknown)
		}
		return t
	})
	top := 0.0
	for _, v := range cost {
		top = max(top, v)
	}
	c.Top = dollars(int64(top), true)
	return c
}

func bytesChart(since time.Time, days []mediaregistry.DayStats) chart {
	var posted, downloaded [chartDays]float64
	for _, d := range days {
		i := int(d.Day.Sub(since).Hours() / 24)
		if i >= 0 && i < chartDays {
			posted[i], downloaded[i] = float64(d.Posted), float64(d.Downloaded)
		}
	}
	names := []string{"posted", "downloaded"}
	c := layout(since, [][chartDays]float64{posted, downloaded}, []string{"bar posted", "bar downloaded"}, func(day time.Time, s int, v float64) string {
		return fmt.Sprintf("%s: %s %s", day.Format("Jan 2"), mediaregistry.FormatSize(int64(v)), names[s])
	})
	top := 0.0
	for _, v := range posted {
		top = max(top, v)
	}
	for _, v := range downloaded {
		top = max(top, v)
	}
	c.Top = mediaregistry.FormatSize(int64(top))
	c.Legend = []legend{{"posted", "posted in the chats"}, {"downloaded", "downloaded by the agent"}}
	return c
}
