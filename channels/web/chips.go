package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// toolChip is one thing the assistant did for an answer, as the room
// shows it: a few words ("looked at beach.jpg") that open the details.
type toolChip struct {
	Label  string `json:"label"`
	Tool   string `json:"tool"`
	Args   string `json:"args,omitempty"`
	Result string `json:"result,omitempty"`
	Failed bool   `json:"failed,omitempty"`
	// Run is the run's page, for the admin.
	Run string `json:"run,omitempty"`
}

// Bounds of what a chip shows: what happened, not the whole of it
// (within what the store keeps of a call: store.ToolClipRunes).
const (
	chipRuns       = 50  // the newest runs of a group searched for answers
	chipArgsRunes  = 300 // a call's arguments
	chipResultRune = 400 // a result's start
)

// The store keeps more of a call than a chip shows, so clipping what it
// keeps is clipping the call (a build with them the other way fails).
const _ = uint(store.ToolClipRunes - max(chipArgsRunes, chipResultRune) - 1)

// chipsFor finds the runs behind the room's answers and what each did.
// An answer is the run's whose span holds its time: a group runs one at
// a time, and its answer is shown before the run is recorded as done.
// Answers whose run is not recorded yet get none; pending says whether
// the newest answer is one (its page asks again). What it reads of each
// run is the start of its tool calls, kept apart from the transcript
// (store.RecentRunTools): a guest polling the room never has whole
// transcripts read.
func (w *Web) chipsFor(ctx context.Context, rm *room, msgs []Message, admin bool) (chips map[int64][]toolChip, pending bool, err error) {
	var answers []Message
	for _, m := range msgs {
		if m.Assistant {
			answers = append(answers, m)
		}
	}
	if len(answers) == 0 || w.o.Store == nil {
		return nil, false, nil
	}
	runs, err := w.o.Store.RecentRunTools(ctx, rm.folder, chipRuns)
	if err != nil {
		return nil, false, err
	}
	chips = map[int64][]toolChip{}
	made := map[string][]toolChip{}
	newest := answers[len(answers)-1]
	pending = true
	for _, r := range runs {
		if !r.Finished.Before(newest.Time.Truncate(time.Millisecond)) {
			pending = false // the newest answer's run, or a later one, is recorded
			break
		}
	}
	for _, m := range answers {
		t := m.Time.Truncate(time.Millisecond)
		for _, r := range runs {
			if t.Before(r.Started) || t.After(r.Finished) {
				continue
			}
			if len(r.Calls) > 0 {
				cs, ok := made[r.ID]
				if !ok {
					cs = w.chipsOf(ctx, rm, r, admin)
					made[r.ID] = cs
				}
				chips[m.Seq] = cs
			}
			break
		}
	}
	return chips, pending, nil
}

// chipsOf is a run's tool calls as chips, each with its result.
func (w *Web) chipsOf(ctx context.Context, rm *room, r store.RunTools, admin bool) []toolChip {
	out := make([]toolChip, 0, len(r.Calls))
	for _, c := range r.Calls {
		if c.Name == llm.LoadTools {
			continue // the model asking for a tool's schema: nothing it did
		}
		chip := toolChip{Tool: c.Name, Label: w.chipLabel(ctx, rm, c.Name, c.Fields), Args: trimTo(c.Args, chipArgsRunes),
			Result: trimTo(c.Result, chipResultRune), Failed: c.Failed}
		if admin {
			chip.Run = "/admin/runs/" + r.ID
		}
		out = append(out, chip)
	}
	return out
}

// chipLabel says in a few words what a call did: the file's name, the
// page's host, the search's words, from its string arguments.
func (w *Web) chipLabel(ctx context.Context, rm *room, tool string, args map[string]string) string {
	str := func(k string) string { return args[k] }
	switch tool {
	case "fetch_media":
		name := "a file"
		if ref := str("mediaRef"); ref != "" && w.env.Registry != nil {
			if r, err := w.env.Registry.Get(ctx, mediaregistry.Chats{ChatID(rm.name)}, ref); err == nil && r.FileName != "" {
				name = r.FileName
			}
		}
		return "looked at " + trimTo(name, 40)
	case "fetch_url":
		if u, err := url.Parse(str("url")); err == nil && u.Host != "" {
			return "read " + trimTo(u.Hostname(), 40)
		}
		return "read a page"
	case "web_search":
		return "searched " + strconv.Quote(trimTo(str("query"), 40))
	case "list_media":
		return "listed the shared files"
	case "send_media":
		return "sent a file"
	case "generate_image":
		return "made a picture"
	case "speak":
		return "recorded a voice note"
	case "generate_video":
		return "made a video"
	case "remember":
		return "remembered a note"
	case "forget":
		return "forgot a note"
	case "schedule_task":
		return "scheduled a task"
	}
	return "used " + tool
}

// toolsOf is GET /r/{room}/tools?seq=N: the chips of the answers from
// seq on, for a page that got an answer before its run was recorded.
func (w *Web) toolsOf(rw http.ResponseWriter, r *http.Request) {
	rm, s := w.authRoom(rw, r, false)
	if rm == nil {
		return
	}
	from, _ := strconv.ParseInt(r.URL.Query().Get("seq"), 10, 64)
	var msgs []Message
	for _, m := range rm.recent(pageMessages) {
		if m.Seq >= from {
			msgs = append(msgs, m)
		}
	}
	chips, pending, err := w.chipsFor(r.Context(), rm, msgs, s.Admin())
	if err != nil {
		w.log.Warn("web room: tool chips not read", "room", rm.name, "err", err)
		w.fail(rw, r, http.StatusInternalServerError, "botd could not read what the assistant did; try again")
		return
	}
	bySeq := map[string][]toolChip{}
	for seq, cs := range chips {
		bySeq[fmt.Sprint(seq)] = cs
	}
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(map[string]any{"chips": bySeq, "pending": pending})
}
