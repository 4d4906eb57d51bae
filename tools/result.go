package tools

import mcpgo "github.com/mark3labs/mcp-go/mcp"

// Result is what a model is shown of one tool call, whichever face shows
// it: the agent turns its parts into the model's content, an MCP server
// into a CallToolResult.
type Result struct {
	Parts []Part
	// IsError: the call failed; the text says why ("tool failed [code]:
	// …"), for the model to read.
	IsError bool
	// Fetched is the host's answer when the call fetched a file into the
	// group folder (fetch_media, fetch_url); nil otherwise. The MCP face
	// links the file for clients on other machines.
	Fetched *FetchMediaResult
}

// Part is one piece of a Result.
type Part struct {
	Content mcpgo.Content
	// Saved is the group-relative path of the file the host saved that
	// this part is exactly (image content of that file's bytes) or links
	// to (a resource link to it); "" for anything else. An agent in the
	// daemon hands its model that file rather than writing the bytes
	// again.
	Saved string
}

// TextResult is a result of one text.
func TextResult(text string) *Result {
	return &Result{Parts: []Part{{Content: mcpgo.NewTextContent(text)}}}
}

// ContentResult is a result of the given content, none of it a saved
// file.
func ContentResult(content ...mcpgo.Content) *Result {
	r := &Result{Parts: make([]Part, len(content))}
	for i, c := range content {
		r.Parts[i].Content = c
	}
	return r
}

// Content is the result's content in order.
func (r *Result) Content() []mcpgo.Content {
	out := make([]mcpgo.Content, len(r.Parts))
	for i, p := range r.Parts {
		out[i] = p.Content
	}
	return out
}
