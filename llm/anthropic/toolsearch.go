package anthropic

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/botd-dev/botd/llm"
)

// Native tool search, as documented in "Tool search tool"
// (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool):
// every tool still goes in tools, the ones to load on demand with
// "defer_loading": true, next to the search tool, which must not be
// deferred. The model searches with server_tool_use; the API answers in
// the same reply with a tool_search_tool_result whose tool_references
// name the tools found, expands them into their definitions, and the
// model calls them with ordinary tool_use. Both blocks must go back
// unchanged with the next request. The feature is generally available
// on the Messages API: no beta header (the quick start sends only
// anthropic-version 2023-06-01; advanced-tool-use-2025-11-20 was its
// beta). The API excludes deferred tools from the cached prefix, and a
// deferred tool cannot carry cache_control (400), so the tools'
// breakpoint goes on the search tool.
const (
	// searchToolType is the BM25 variant: the model asks in natural
	// language, which suits a catalogue it has never seen, rather than
	// writing Python regular expressions against names it cannot know.
	searchToolType = "tool_search_tool_bm25_20251119"
	searchToolName = "tool_search_tool_bm25"
)

// vendor tags the parts this adapter makes (llm.Part.Vendor): the wire
// format, not the configured provider name, since any Anthropic
// endpoint accepts them back.
const vendor = "anthropic"

// ToolSearch reports whether model has native tool search. The docs'
// model compatibility table lists the Claude 4.5 models (Opus, Sonnet,
// Haiku), every later 4.x and the 5 generation; "Claude Opus 4.1 and
// earlier models don't support the tool search tool". A model id this
// cannot read (the claude-3-5-sonnet naming, an alias of a proxy) takes
// the generic path, which works everywhere.
func (p *Provider) ToolSearch(model string) bool { return toolSearch(model) }

var _ llm.ToolSearcher = (*Provider)(nil)

func toolSearch(model string) bool {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // a gateway's vendor/ path
	}
	m = strings.TrimPrefix(m, "anthropic.") // Bedrock's ids
	rest, ok := strings.CutPrefix(m, "claude-")
	if !ok {
		return false
	}
	// claude-<family>-<major>[-<minor>][-<date>|@<date>|-v1:0...]
	seg := strings.FieldsFunc(rest, func(r rune) bool { return r == '-' || r == '@' || r == ':' })
	if len(seg) < 2 {
		return false
	}
	if _, err := strconv.Atoi(seg[0]); err == nil {
		return false // claude-3-5-sonnet: the old naming, all before 4.5
	}
	major, err := strconv.Atoi(seg[1])
	if err != nil || len(seg[1]) > 2 {
		return false
	}
	minor := 0
	if len(seg) > 2 && len(seg[2]) <= 2 {
		if n, err := strconv.Atoi(seg[2]); err == nil {
			minor = n // a one- or two-digit version, not an 8-digit date
		}
	}
	return major > 4 || major == 4 && minor >= 5
}

// native reports whether req goes out with native tool search.
func native(req *llm.Request) bool { return len(req.Deferred) > 0 && toolSearch(req.Model) }

// buildTools lowers req's tools. On the native path the order is the
// tools of req.Tools that are not deferred (LoadTools left out), the
// search tool, then every deferred tool in req.Deferred's order: the
// same for every turn of a run, since Deferred is fixed and a tool
// loaded into req.Tools is among the deferred ones, so the cached
// prefix holds. Otherwise req.Tools go as they are.
func buildTools(req *llm.Request, nativeSearch bool) []wireTool {
	if !nativeSearch {
		out := make([]wireTool, 0, len(req.Tools))
		for _, t := range req.Tools {
			out = append(out, functionTool(t))
		}
		return out
	}
	deferred := make(map[string]bool, len(req.Deferred))
	for _, t := range req.Deferred {
		deferred[t.Name] = true
	}
	out := make([]wireTool, 0, len(req.Tools)+1+len(req.Deferred))
	for _, t := range req.Tools {
		if !deferred[t.Name] && t.Name != llm.LoadTools {
			out = append(out, functionTool(t))
		}
	}
	out = append(out, wireTool{Type: searchToolType, Name: searchToolName})
	for _, t := range req.Deferred {
		w := functionTool(t)
		w.DeferLoading = true
		out = append(out, w)
	}
	return out
}

func functionTool(t llm.Tool) wireTool {
	schema := t.Parameters
	if len(schema) == 0 {
		schema = emptySchema
	}
	return wireTool{Name: t.Name, Description: t.Description, InputSchema: schema}
}

// searchResult is the content of a tool_search_tool_result block: the
// tools found, or an error (tool_search_tool_result_error, which names
// none).
type searchResult struct {
	Content struct {
		Type       string `json:"type"`
		References []struct {
			Type     string `json:"type"`
			ToolName string `json:"tool_name"`
		} `json:"tool_references"`
	} `json:"content"`
}

// foundTools names the tools a tool_search_tool_result block loaded.
func foundTools(raw json.RawMessage) []string {
	var r searchResult
	if json.Unmarshal(raw, &r) != nil || r.Content.Type != "tool_search_tool_search_result" {
		return nil
	}
	var out []string
	for _, ref := range r.Content.References {
		if ref.Type == "tool_reference" && ref.ToolName != "" {
			out = append(out, ref.ToolName)
		}
	}
	return out
}
