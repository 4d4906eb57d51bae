package llm

import "encoding/json"

// Text is a text part.
func Text(s string) Part { return Part{Kind: PartText, Text: s} }

// Reasoning is a reasoning part with its opaque signature (may be empty).
func Reasoning(text, signature string) Part {
	return Part{Kind: PartReasoning, Text: text, Signature: signature}
}

// ToolCallPart is an assistant's request to run a tool. Nil or empty args
// become {}.
func ToolCallPart(id, name string, args json.RawMessage) Part {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return Part{Kind: PartToolCall, ToolCall: &ToolCall{ID: id, Name: name, Args: args}}
}

// ToolResultPart answers the tool call callID. content holds text and media
// parts, e.g. ToolResultPart(id, false, Text("done"), ImageFile("image/png", p)).
func ToolResultPart(callID string, isError bool, content ...Part) Part {
	return Part{Kind: PartToolResult, ToolResult: &ToolResult{CallID: callID, Content: content, IsError: isError}}
}

// MediaFile refers to a file on disk (e.g. in the media cache); the adapter
// reads it only when it builds the wire request.
func MediaFile(mime, path string) Part {
	return Part{Kind: PartMedia, Media: &Media{MIME: mime, Path: path}}
}

// ImageFile is MediaFile for images, named for readability at call sites.
func ImageFile(mime, path string) Part { return MediaFile(mime, path) }

// MediaBase64 carries bytes inline as standard base64.
func MediaBase64(mime, data string) Part {
	return Part{Kind: PartMedia, Media: &Media{MIME: mime, Data: data}}
}

// MediaURL refers to media the vendor fetches itself.
func MediaURL(mime, url string) Part {
	return Part{Kind: PartMedia, Media: &Media{MIME: mime, URL: url}}
}

// VendorPart is a vendor's block (see [PartVendor]): raw, one JSON
// object, goes back only to an adapter of that vendor.
func VendorPart(vendor string, raw json.RawMessage) Part {
	return Part{Kind: PartVendor, Vendor: vendor, Raw: raw}
}

// UserText is a user message holding one text part.
func UserText(s string) Message { return Message{Role: RoleUser, Parts: []Part{Text(s)}} }

// ToolResults is a tool message carrying results.
func ToolResults(parts ...Part) Message { return Message{Role: RoleTool, Parts: parts} }

// StripReasoning returns a copy of msgs without reasoning parts, vendor
// parts and tool-call signatures. Signatures and vendor blocks are only
// valid for the provider that issued them, so they must not cross a
// provider boundary. msgs is not modified.
func StripReasoning(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		parts := make([]Part, 0, len(m.Parts))
		for _, p := range m.Parts {
			switch {
			case p.Kind == PartReasoning, p.Kind == PartVendor:
				continue
			case p.Kind == PartToolCall && p.ToolCall != nil && p.ToolCall.Signature != "":
				tc := *p.ToolCall
				tc.Signature = ""
				p.ToolCall = &tc
			}
			parts = append(parts, p)
		}
		if len(parts) == 0 {
			continue
		}
		out = append(out, Message{Role: m.Role, Parts: parts})
	}
	return out
}
