package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"time"

	"github.com/botd-dev/botd/store"
)

// maxPartRunes bounds one text, argument or result a run page shows: a
// fetched page or a document's text can be long, and the page is for
// seeing what happened, not for reading it all.
const maxPartRunes = 4000

// runBody is the body of a run page.
type runBody struct {
	runRow
	Iterations int
	Calls      []callRow
	Turns      []turnView
}

type callRow struct {
	At, Model, Outcome, Error, Took, Cost string
	In, Out, CacheRead                    int64
}

type turnView struct {
	Role  string
	Turn  int // the model turn an assistant message is, from 1
	Parts []partView
}

type partView struct {
	Kind, Text, Name, Body string
	IsError                bool
}

// runPage shows one run: its model calls with their timings, tokens and
// cost, and its transcript, tool calls with their arguments and results.
func (w *Web) runPage(rw http.ResponseWriter, r *http.Request) {
	s := w.adminSession(rw, r, true)
	if s == nil {
		return
	}
	if w.o.Store == nil {
		w.fail(rw, r, http.StatusNotFound, "this botd keeps no runs")
		return
	}
	d, err := w.o.Store.RunDetail(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNoRun) {
		w.fail(rw, r, http.StatusNotFound, "no such run: it never was, or it is older than what botd keeps")
		return
	}
	if err != nil {
		w.log.Warn("web run page failed", "run", r.PathValue("id"), "err", err)
		w.fail(rw, r, http.StatusInternalServerError, "botd could not read this run; try again")
		return
	}
	p := w.page("Run", s, "")
	p.Body = runDetailView(d)
	w.render(rw, http.StatusOK, "run.html", p)
}

func runDetailView(d store.RunDetail) runBody {
	b := runBody{runRow: runView(d.RunSummary), Iterations: d.Iterations}
	for _, a := range d.Attempts {
		b.Calls = append(b.Calls, callRow{At: a.At.Local().Format("15:04:05.000"), Model: path.Join(a.Provider, a.Model),
			Outcome: a.Outcome, Error: trimTo(a.Error, 400), Took: a.Duration.Round(time.Millisecond).String(),
			Cost: dollars(a.CostMicrocents, a.CostKnown), In: a.Input, Out: a.Output, CacheRead: a.CacheRead})
	}
	names := map[string]string{} // tool call id → name, for the results
	turn := 0
	for _, e := range d.Transcript {
		var parts []store.TranscriptPart
		tv := turnView{Role: e.Role}
		if e.Role == "assistant" {
			turn++
			tv.Turn = turn
		}
		if err := json.Unmarshal(e.Parts, &parts); err != nil {
			tv.Parts = []partView{{Kind: "media", Text: "(this message could not be read: " + err.Error() + ")"}}
			b.Turns = append(b.Turns, tv)
			continue
		}
		for _, p := range parts {
			tv.Parts = append(tv.Parts, partOf(p, names))
		}
		b.Turns = append(b.Turns, tv)
	}
	return b
}

func partOf(p store.TranscriptPart, names map[string]string) partView {
	switch {
	case p.Kind == "tool_call" && p.ToolCall != nil:
		names[p.ToolCall.ID] = p.ToolCall.Name
		return partView{Kind: "tool_call", Name: p.ToolCall.Name, Body: trimTo(prettyJSON(p.ToolCall.Args), maxPartRunes)}
	case p.Kind == "tool_result" && p.ToolResult != nil:
		var body bytes.Buffer
		for _, c := range p.ToolResult.Content {
			if body.Len() > 0 {
				body.WriteString("\n")
			}
			if c.Kind == "text" {
				body.WriteString(c.Text)
			} else {
				body.WriteString(partOf(c, names).Text)
			}
		}
		return partView{Kind: "tool_result", Name: names[p.ToolResult.CallID], Body: trimTo(body.String(), maxPartRunes), IsError: p.ToolResult.IsError}
	case p.Kind == "text" || p.Kind == "reasoning":
		return partView{Kind: p.Kind, Text: trimTo(p.Text, maxPartRunes)}
	case p.Media != nil:
		where := path.Base(p.Media.Path)
		if p.Media.Path == "" {
			where = "inline"
		}
		return partView{Kind: "media", Text: fmt.Sprintf("(%s: %s)", p.Media.MIME, where)}
	}
	return partView{Kind: "media", Text: "(" + p.Kind + ")"}
}

// prettyJSON indents a tool's arguments; what is not JSON is shown as is.
func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}
