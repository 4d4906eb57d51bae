package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// What is kept of each tool call, apart from its transcript: enough for
// a room's chips (what was called, a start of its arguments and result)
// and for a label naming what the call was about, so that reading them
// never reads a transcript, whose tool results (pages, documents) can be
// megabytes a run.
const (
	// ToolClipRunes bounds a kept call's arguments and result.
	ToolClipRunes = 512
	// ToolFieldRunes bounds each of a call's string arguments kept as
	// its Fields: a page's address up to that length names its host.
	ToolFieldRunes = 2048
	// toolFieldBytes bounds a call's Fields in all.
	toolFieldBytes = 8 << 10
)

// ToolCall is one tool call of a run, as kept for summaries.
type ToolCall struct {
	Name string
	// Args is the call's arguments as the model wrote them (JSON), their
	// first ToolClipRunes runes.
	Args string
	// Fields are the arguments' top-level string values, each its first
	// ToolFieldRunes runes, in key order until toolFieldBytes.
	Fields map[string]string
	// Result is the text of the call's result with every run of white
	// space made one space, its first ToolClipRunes runes; empty when no
	// result is recorded. Failed says the result is an error.
	Result string
	Failed bool
}

// RunTools is a run's span and the tool calls it made.
type RunTools struct {
	ID                string
	Started, Finished time.Time
	// Calls are the run's tool calls in order; none when the assistant
	// called no tool (the dashboard lists no tools for it).
	Calls []ToolCall
}

// RecentRunTools lists the newest runs of folder, newest first, each
// with its tool calls as kept at SaveRun. A run recorded before they were
// kept (schema 24) has them kept now, from its transcript read one entry
// at a time.
func (s *Store) RecentRunTools(ctx context.Context, folder string, limit int) ([]RunTools, error) {
	type run struct {
		RunTools
		kept bool
	}
	runs, err := sqlrows.Query(ctx, s.DB, "runs' tools of "+folder, func(r sqlrows.Scanner) (run, error) {
		var rt run
		var st, fin int64
		err := r.Scan(&rt.ID, &st, &fin, &rt.kept)
		rt.Started, rt.Finished = time.UnixMilli(st), time.UnixMilli(fin)
		return rt, err
	}, `SELECT id, started, finished, tool_calls_kept FROM agent_runs WHERE folder = ?
		ORDER BY started DESC, rowid DESC LIMIT ?`, folder, limit)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	at := make(map[string]int, len(runs))
	args := make([]any, 0, len(runs))
	out := make([]RunTools, len(runs))
	for i, r := range runs {
		if !r.kept {
			if err := s.keepToolCalls(ctx, r.ID); err != nil {
				return nil, err
			}
		}
		at[r.ID] = i
		args = append(args, r.ID)
		out[i] = r.RunTools
	}
	type row struct {
		run   string
		named bool
		call  ToolCall
	}
	rows, err := sqlrows.Query(ctx, s.DB, "tool calls of "+folder, func(r sqlrows.Scanner) (row, error) {
		var c row
		var fields string
		err := r.Scan(&c.run, &c.named, &c.call.Name, &c.call.Args, &fields, &c.call.Result, &c.call.Failed)
		if err == nil && fields != "{}" {
			err = json.Unmarshal([]byte(fields), &c.call.Fields)
		}
		return c, err
	}, `SELECT run_id, named, name, args, fields, result, failed FROM agent_tool_calls
		WHERE run_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")+`) ORDER BY run_id, idx`, args...)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, c := range rows {
		i := at[c.run]
		out[i].Calls = append(out[i].Calls, c.call)
		named[c.run] = named[c.run] || c.named
	}
	for i := range out {
		if !named[out[i].ID] {
			out[i].Calls = nil // what the dashboard lists as no tools shows none
		}
	}
	return out, nil
}

// keepToolCalls keeps the tool calls of a run recorded before they were
// kept, reading its transcript an entry at a time; a second reader doing
// the same at once (in this process or another on the database) finds
// it done and keeps nothing twice.
func (s *Store) keepToolCalls(ctx context.Context, id string) error {
	// One at a time in this process: polls arriving together wait for
	// the first to keep the run rather than each reading its transcript.
	s.keeping.Lock()
	defer s.keeping.Unlock()
	var kept bool
	if err := s.DB.QueryRowContext(ctx, `SELECT tool_calls_kept FROM agent_runs WHERE id = ?`, id).Scan(&kept); err != nil || kept {
		if errors.Is(err, sql.ErrNoRows) {
			return nil // pruned meanwhile
		}
		if err != nil {
			return fmt.Errorf("tool calls of run %s: %w", id, err)
		}
		return nil
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT role, parts FROM agent_transcripts WHERE run_id = ? ORDER BY idx`, id)
	if err != nil {
		return fmt.Errorf("tool calls of run %s: %w", id, err)
	}
	var k toolKeeper
	for rows.Next() {
		var role, parts string
		if err := rows.Scan(&role, &parts); err != nil {
			rows.Close()
			return fmt.Errorf("tool calls of run %s: %w", id, err)
		}
		k.add(role, []byte(parts))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("tool calls of run %s: %w", id, err)
	}
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("tool calls of run %s: %w", id, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE agent_runs SET tool_calls_kept = 1 WHERE id = ? AND tool_calls_kept = 0`, id)
	if err != nil {
		return fmt.Errorf("tool calls of run %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // kept by another reader meanwhile
	}
	if err := k.save(ctx, tx, id); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("tool calls of run %s: %w", id, err)
	}
	return nil
}

// toolKeeper makes a run's kept tool calls from its transcript, entry by
// entry: a result goes with the newest call of its id.
type toolKeeper struct {
	calls []keptCall
	at    map[string]int // call id → its index in calls
}

type keptCall struct {
	ToolCall
	// named is a call the assistant made with a tool's name: a run with
	// none lists no tools.
	named bool
}

// TranscriptPart is what botd reads back of a stored transcript part
// (the agent's llm.Part as JSON): the kept tool calls here and the run
// pages of the web channel, neither of which links the LLM seam.
type TranscriptPart struct {
	Kind     string `json:"kind"`
	Text     string `json:"text"`
	ToolCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"tool_call"`
	ToolResult *struct {
		CallID  string           `json:"call_id"`
		Content []TranscriptPart `json:"content"`
		IsError bool             `json:"is_error"`
	} `json:"tool_result"`
	Media *struct {
		MIME string `json:"mime"`
		Path string `json:"path"`
		URL  string `json:"url"`
	} `json:"media"`
}

// add takes one transcript message; one this build cannot read adds
// nothing.
func (k *toolKeeper) add(role string, raw []byte) {
	var parts []TranscriptPart
	if json.Unmarshal(raw, &parts) != nil {
		return
	}
	if k.at == nil {
		k.at = map[string]int{}
	}
	for _, p := range parts {
		switch {
		case p.Kind == "tool_call" && p.ToolCall != nil:
			k.at[p.ToolCall.ID] = len(k.calls)
			k.calls = append(k.calls, keptCall{ToolCall: ToolCall{Name: p.ToolCall.Name, Args: clipRunes(string(p.ToolCall.Args), ToolClipRunes),
				Fields: stringFields(p.ToolCall.Args)}, named: role == "assistant" && p.ToolCall.Name != ""})
		case p.Kind == "tool_result" && p.ToolResult != nil:
			i, ok := k.at[p.ToolResult.CallID]
			if !ok {
				continue
			}
			var w wordClip
			for _, c := range p.ToolResult.Content {
				if c.Kind == "text" && w.write(c.Text) {
					break
				}
			}
			k.calls[i].Result = w.b.String()
			k.calls[i].Failed = p.ToolResult.IsError
		}
	}
}

// save writes the calls of run id in tx.
func (k *toolKeeper) save(ctx context.Context, tx *sql.Tx, id string) error {
	for i, c := range k.calls {
		fields, err := json.Marshal(c.Fields)
		if err != nil || c.Fields == nil {
			fields = []byte("{}")
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO agent_tool_calls(run_id, idx, named, name, args, fields, result, failed)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, i, c.named, c.Name, c.Args, string(fields), c.Result, c.Failed); err != nil {
			return fmt.Errorf("save run %s tool calls: %w", id, err)
		}
	}
	return nil
}

// stringFields is the top-level string values of the JSON object raw,
// each clipped, in key order until toolFieldBytes; nil for anything else.
func stringFields(raw json.RawMessage) map[string]string {
	var args map[string]any
	if json.Unmarshal(raw, &args) != nil {
		return nil
	}
	keys := make([]string, 0, len(args))
	for k, v := range args {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out map[string]string
	size := 0
	for _, k := range keys {
		v := clipRunes(args[k].(string), ToolFieldRunes)
		if size += len(k) + len(v); size > toolFieldBytes {
			break
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// clipRunes is s's first n runes.
func clipRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// wordClip gathers the start of texts with every run of white space made
// one space (strings.Fields' words joined by spaces), stopping at
// ToolClipRunes runes: a result of megabytes is never copied whole.
type wordClip struct {
	b     strings.Builder
	runes int
	space bool // white space since the last word
}

// write adds s, as if after a space; it says whether the clip is full.
func (w *wordClip) write(s string) (full bool) {
	w.space = true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			w.space = true
			i += size
			continue
		}
		if w.space && w.runes > 0 {
			w.b.WriteByte(' ')
			if w.runes++; w.runes == ToolClipRunes {
				return true
			}
		}
		w.space = false
		w.b.WriteString(s[i : i+size]) // an invalid byte is kept as it was, one rune
		if w.runes++; w.runes == ToolClipRunes {
			return true
		}
		i += size
	}
	return false
}
