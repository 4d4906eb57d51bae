package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/botd-dev/botd/access"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store"
)

const chatsLine = "botd chats list | approve CODE [--folder NAME] [--name NAME] | deny CODE | remove FOLDER [--config FILE]"

// keptMark is the file in the data folder `botd chats approve|remove`
// rewrites after changing the groups approved live: botd run watches it
// (fsnotify) and reads the groups at once. In botd run itself the gate
// and the dashboard tell the watcher directly (kickKept).
const keptMark = "chats.updated"

// keptPoll is how often botd run reads the groups approved live with no
// word of a change, on a database another machine's `botd chats` or a
// second instance may change (Postgres); on SQLite with the mark watched
// an idle botd never reads them.
const keptPoll = time.Minute

// keptEvery is that period when the mark cannot be watched (no inotify
// left): the change is then found by reading the database this often.
const keptEvery = 2 * time.Second

// cmdChats manages the chats of access: it works on the database, so it
// works while `botd run` runs; it tells the daemon through keptMark, which
// takes the change up at once.
func cmdChats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chats", chatsLine,
		"Manage the chats botd answers beyond the config's groups: list the groups approved live and the chats waiting with a "+
			"pairing code; approve one (it becomes a group kept in the database, answered within seconds, no restart); deny one "+
			"(botd stays silent there); remove a group approved live.", stderr)
	folder := fs.String("folder", "", "approve: the group's folder (default: from the chat's name)")
	name := fs.String("name", "", "approve: the group's name (default: the chat's)")
	cfgFlag := configFlag(fs)
	// The verb and its argument may come before or after the flags.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fail(2, "")
	}
	var pos []string
	for fs.NArg() > 0 {
		pos = append(pos, fs.Arg(0))
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return fail(2, "")
		}
	}
	want := map[string]int{"list": 1, "approve": 2, "deny": 2, "remove": 2}
	if len(pos) == 0 || want[pos[0]] != len(pos) {
		fs.Usage()
		return fail(2, "want one of: chats list, chats approve CODE, chats deny CODE, chats remove FOLDER")
	}
	if (*folder != "" || *name != "") && pos[0] != "approve" {
		return fail(2, "--folder and --name go with approve")
	}
	cfg, err := loadConfig(*cfgFlag)
	if err != nil {
		return err
	}
	if err := databaseExists(cfg, "botd has not run here"); err != nil {
		return err
	}
	st, err := store.Connect(ctx, *config.Section[store.Config](cfg), cfg.DataDir)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer st.Close()
	as := &access.Store{DB: st.DB}
	switch pos[0] {
	case "list":
		return listChats(ctx, cfg, as, stdout)
	case "approve":
		k, err := as.Approve(ctx, pos[1], access.Approval{Folder: *folder, Name: *name, By: "cli", Taken: configTaken(cfg)})
		if err != nil {
			return fail(1, "approve: %v", err)
		}
		tellKept(cfg.DataDir, stderr)
		fmt.Fprintf(stdout, "approved: %s is now the group %q (folder %s); a running botd answers there within seconds\n",
			orDash(k.Name, k.Chat), k.Folder, k.Folder)
	case "deny":
		r, err := as.Deny(ctx, pos[1])
		if err != nil {
			return fail(1, "deny: %v", err)
		}
		fmt.Fprintf(stdout, "denied: %s (%s); botd stays silent there\n", orDash(r.ChatName, r.Chat), r.Chat)
	case "remove":
		if configTaken(cfg)(pos[1]) {
			return fail(1, "remove: the group %q is in the config file (groups:); remove it there and restart", pos[1])
		}
		k, err := as.Remove(ctx, pos[1])
		if err != nil {
			return fail(1, "remove %s: %v", pos[1], err)
		}
		tellKept(cfg.DataDir, stderr)
		fmt.Fprintf(stdout, "removed: the group %q (%s); its folder and messages stay\n", k.Folder, k.Chat)
	}
	return nil
}

// configTaken reports whether a folder or chat is a group's of the config.
func configTaken(cfg *config.Config) func(string) bool {
	return func(v string) bool {
		for _, g := range cfg.Groups {
			if g.Folder == v || g.Chat == v {
				return true
			}
		}
		return false
	}
}

func orDash(s, alt string) string {
	if s != "" {
		return s
	}
	if alt != "" {
		return alt
	}
	return "-"
}

func listChats(ctx context.Context, cfg *config.Config, as *access.Store, stdout io.Writer) error {
	kept, err := as.Kept(ctx)
	if err != nil {
		return fail(1, "%v", err)
	}
	pending, err := as.Pending(ctx)
	if err != nil {
		return fail(1, "%v", err)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tCHAT\tNAME\tFROM")
	for _, g := range cfg.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%s\tconfig\n", g.Folder, g.Chat, orDash(g.Name, ""))
	}
	for _, k := range kept {
		fmt.Fprintf(tw, "%s\t%s\t%s\tapproved %s by %s\n", k.Folder, k.Chat, orDash(k.Name, ""), ago(now.Sub(k.Approved))+" ago", k.ApprovedBy)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(pending) == 0 {
		_, err := fmt.Fprintln(stdout, "\nno chat waits for approval")
		return err
	}
	fmt.Fprintln(stdout, "\nwaiting for approval (botd chats approve CODE):")
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tCHAT\tNAME\tKIND\tASKED\tBY")
	for _, r := range pending {
		kind := "group"
		if !r.IsGroup {
			kind = "direct"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", access.ShowCode(r.Code), r.Chat, orDash(r.ChatName, ""), kind,
			ago(now.Sub(r.Created))+" ago", orDash(r.SenderName, r.SenderID))
	}
	return tw.Flush()
}

// accessStore is the daemon's view of access's tables.
func (d *daemon) accessStore() *access.Store { return &access.Store{DB: d.store.DB} }

// loadKept adds the groups approved live to the set at start, before
// their workspaces are made; one that now clashes with the config is
// left out with a warning.
func (d *daemon) loadKept(ctx context.Context) error {
	kept, err := d.accessStore().Kept(ctx)
	if err != nil {
		return err
	}
	for _, k := range kept {
		if err := d.groups.Add(d.cfg.AssistantName, k.Group()); err != nil {
			d.log.Warn("group approved live left out: it clashes with the config", "group", k.Folder, "chat", k.Chat, "err", err)
		}
	}
	return nil
}

// newGate is the agent's gate of access: pairing and chat approvals.
func (d *daemon) newGate() *access.Gate {
	return &access.Gate{
		Store: d.accessStore(), Config: *config.Section[access.Config](d.cfg), AssistantName: d.cfg.AssistantName,
		Channel: d.chanFor, Taken: d.taken, Approved: d.kickKept,
		Log: d.log.With("component", "access"),
	}
}

// taken reports whether a folder or chat is a running group's.
func (d *daemon) taken(v string) bool {
	if _, ok := d.groups.ByFolder(v); ok {
		return true
	}
	_, ok := d.groups.ByChat(v)
	return ok
}

// decideChat approves or denies a chat from the dashboard; a refusal is
// said as it is, a failure of the database only as a failure (logged).
func (d *daemon) decideChat(ctx context.Context, code string, approve bool) (string, error) {
	as := d.accessStore()
	var said string
	var err error
	if approve {
		var k access.Kept
		if k, err = as.Approve(ctx, code, access.Approval{By: "dashboard", Taken: d.taken}); err == nil {
			d.kickKept()
			said = fmt.Sprintf("approved %s as the group %q", k.Chat, k.Folder)
		}
	} else {
		var r access.Request
		if r, err = as.Deny(ctx, code); err == nil {
			said = "denied " + r.Chat
		}
	}
	if err != nil && !access.Refused(err) {
		d.log.Error("dashboard: pending chat not decided", "err", err)
		return "", errors.New("the database did not take it; see botd's log")
	}
	return said, err
}

// chanFor finds the channel of a chat among those started; safe while
// channels deliver.
func (d *daemon) chanFor(chat string) (channels.Channel, bool) {
	m := d.chanSnap.Load()
	if m == nil {
		return nil, false
	}
	ch, ok := (*m)[store.Channel(chat)]
	return ch, ok
}

// kickKept makes the watcher of kept groups look now.
func (d *daemon) kickKept() {
	select {
	case d.keptKick <- struct{}{}:
	default:
	}
}

// tellKept rewrites keptMark so that a running botd takes a change of the
// groups approved live up at once. The change is in the database either
// way: a mark not written is a warning (botd then finds it at its next
// read, or restart), never a failure of the command. No data folder here
// is a botd on another host (Postgres): it reads them within keptPoll.
func tellKept(dataDir string, stderr io.Writer) {
	if err := writeKeptMark(dataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "warning: a running botd was not told (%v); it takes the change up within a minute on Postgres, "+
			"at its restart on SQLite\n", err)
	}
}

// writeKeptMark writes keptMark in place (a watch on the file survives
// it), inside the data folder.
func writeKeptMark(dataDir string) error {
	root, err := os.OpenRoot(dataDir)
	if err != nil {
		return fmt.Errorf("chats mark: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(keptMark, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("chats mark: %w", err)
	}
	_, err = f.WriteString(strconv.FormatInt(time.Now().UnixMilli(), 10) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("chats mark: %w", err)
	}
	return nil
}

// watchKeptMark watches keptMark (created when missing) and sends on
// kick at each change of it, until ctx ends. It returns once the watch is
// in place, so a mark written from then on is seen.
func (d *daemon) watchKeptMark(ctx context.Context) error {
	path := filepath.Join(d.cfg.DataDir, keptMark)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := writeKeptMark(d.cfg.DataDir); err != nil {
			return err
		}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", keptMark, err)
	}
	if err := w.Add(path); err != nil {
		w.Close()
		return fmt.Errorf("watching %s: %w", keptMark, err)
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				d.kickKept()
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					// Replaced rather than rewritten: watch the new file.
					_ = w.Remove(path)
					if err := writeKeptMark(d.cfg.DataDir); err == nil {
						err = w.Add(path)
					}
					if err != nil {
						d.log.Warn("groups approved live by botd chats are taken up at restart only: their mark is not watched", "err", err)
						return
					}
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				d.log.Warn("watching the mark of botd chats", "err", err)
				d.kickKept()
			}
		}
	}()
	return nil
}

// watchKept keeps the running set in step with the groups approved live
// until ctx ends: at once when told (kickKept: the gate, the dashboard,
// botd chats through keptMark), and every keptPoll on Postgres, where
// another machine may change them unheard. A group new to the set gets
// its workspace and a word in its chat; one no longer kept is dropped
// (its messages are then stored as a stranger's: not at all).
func (d *daemon) watchKept(ctx context.Context) {
	every := time.Duration(0)
	if d.store.Dialect == sqldialect.Postgres {
		every = keptPoll
	}
	if err := d.watchKeptMark(ctx); err != nil {
		d.log.Warn("botd chats approve|remove is taken up by reading the database every "+keptEvery.String(), "err", err)
		every = keptEvery
	}
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-d.keptKick:
		}
		if err := d.syncKept(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("groups approved live not read; trying again", "err", err)
			if tick == nil {
				t := time.NewTimer(keptEvery)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				d.kickKept()
			}
		}
	}
}

func (d *daemon) syncKept(ctx context.Context) error {
	kept, err := d.accessStore().Kept(ctx)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, k := range kept {
		want[k.Folder] = true
		if _, ok := d.groups.ByFolder(k.Folder); ok {
			continue
		}
		g := k.Group()
		if err := d.groups.Add(d.cfg.AssistantName, g); err != nil {
			d.log.Warn("group approved live left out", "group", k.Folder, "chat", k.Chat, "err", err)
			continue
		}
		gp, _ := d.groups.ByFolder(k.Folder)
		if _, err := groups.EnsureWorkspace(d.cfg.GroupsDir, gp); err != nil {
			d.disable(k.Folder, err)
			continue
		}
		d.log.Info("group approved live: answering there now", "group", k.Folder, "chat", k.Chat, "by", k.ApprovedBy)
		d.greet(ctx, gp)
	}
	for _, g := range d.groups.All() {
		if g.Kept && !want[g.Folder] {
			if _, err := d.groups.Remove(g.Folder); err == nil {
				d.log.Info("group approved live was removed: no longer answering there", "group", g.Folder, "chat", g.Chat)
			}
		}
	}
	d.followGroups()
	return nil
}

// greet tells a chat just approved how to address the assistant.
func (d *daemon) greet(ctx context.Context, g *groups.Group) {
	ch, ok := d.chanFor(g.Chat)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	text := fmt.Sprintf("This chat is approved. Start a message with %s (or mention me) and I'll answer.", g.Trigger)
	if isGroup, known, err := d.store.ChatIsGroup(ctx, g.Chat); err == nil && known && !isGroup {
		text = "This chat is approved. Write to me here and I'll answer."
	} else if s, ok := ch.(channels.Sighted); ok && s.SightNote() != "" {
		text += "\n\n" + s.SightNote()
	}
	if _, err := ch.Send(ctx, channels.OutMessage{Chat: g.Chat, Text: text}); err != nil {
		d.log.Warn("could not greet the approved chat", "group", g.Folder, "err", err)
	}
}

// sweepPairing removes expired codes and old reply marks every interval
// until ctx ends.
func (d *daemon) sweepPairing(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := d.accessStore().Sweep(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("pairing sweep failed", "err", err)
		} else if n > 0 {
			d.log.Debug("pairing sweep", "removed", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pendingChats are the chats waiting with a code, for the dashboard.
func (d *daemon) pendingChats(ctx context.Context) ([]web.PendingChat, error) {
	ps, err := d.accessStore().Pending(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]web.PendingChat, 0, len(ps))
	for _, p := range ps {
		kind := "group"
		if !p.IsGroup {
			kind = "direct"
		}
		out = append(out, web.PendingChat{Code: access.ShowCode(p.Code), Chat: p.Chat, Name: p.ChatName, Kind: kind,
			By: orDash(p.SenderName, p.SenderID), Asked: p.Created})
	}
	return out, nil
}

// keptFolders are the folders of the groups approved live, for commands
// that name a group; none when the database is not there or not read.
func keptFolders(ctx context.Context, cfg *config.Config) []string {
	if databaseExists(cfg, "") != nil {
		return nil
	}
	st, err := store.Connect(ctx, *config.Section[store.Config](cfg), cfg.DataDir)
	if err != nil {
		return nil
	}
	defer st.Close()
	kept, err := (&access.Store{DB: st.DB}).Kept(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, k := range kept {
		out = append(out, k.Folder)
	}
	return out
}

// addKeptGroups adds to set the groups of want that were approved live
// (botd chats approve): they are kept in the database, not the file, so
// `botd mcp --group` finds them there. A database botd mcp cannot read
// leaves set as it is, and the folder is then an unknown group.
func addKeptGroups(ctx context.Context, cfg *config.Config, set *groups.Set, want []string) {
	missing := slices.ContainsFunc(want, func(f string) bool { _, ok := set.ByFolder(f); return !ok })
	if !missing || databaseExists(cfg, "") != nil {
		return
	}
	st, err := store.Connect(ctx, *config.Section[store.Config](cfg), cfg.DataDir)
	if err != nil {
		return
	}
	defer st.Close()
	kept, err := (&access.Store{DB: st.DB}).Kept(ctx)
	if err != nil {
		return
	}
	for _, k := range kept {
		if slices.Contains(want, k.Folder) {
			_ = set.Add(cfg.AssistantName, k.Group()) // a clash with the config: the config's group stands
		}
	}
}
