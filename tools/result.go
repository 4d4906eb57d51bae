package tools

// Result is what a model is shown of one tool call, whichever face shows
// it: the agent turns its parts into the model's content, an MCP server
// into MCP content.
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

// PartKind says what a Part is.
type PartKind int

const (
	// PartText is words: Text.
	PartText PartKind = iota
	// PartImage is an image: Data (base64) of type MIME.
	PartImage
	// PartAudio is sound: Data (base64) of type MIME.
	PartAudio
	// PartLink points at a file: URI, Name, Description, MIME.
	PartLink
	// PartTextResource is an attached text: URI, MIME, Text.
	PartTextResource
	// PartBlobResource is an attached file: URI, MIME, Data (base64).
	PartBlobResource
)

// Part is one piece of a Result (MCP's content kinds, in botd's words).
type Part struct {
	Kind PartKind
	Text string
	// Data is the bytes of an image, a sound or an attached file, in
	// base64.
	Data              string
	MIME              string
	URI               string
	Name, Description string // of a link
	// Saved is the group-relative path of the file the host saved that
	// this part is exactly (an image of that file's bytes) or links to (a
	// link to it); "" for anything else. An agent in the daemon hands its
	// model that file rather than writing the bytes again.
	Saved string
}

// Text is a part of words.
func Text(s string) Part { return Part{Kind: PartText, Text: s} }

// Image is an image part of base64 data.
func Image(data, mime string) Part { return Part{Kind: PartImage, Data: data, MIME: mime} }

// Link is a part pointing at uri.
func Link(uri, name, description, mime string) Part {
	return Part{Kind: PartLink, URI: uri, Name: name, Description: description, MIME: mime}
}

// TextResource is an attached text.
func TextResource(uri, mime, text string) Part {
	return Part{Kind: PartTextResource, URI: uri, MIME: mime, Text: text}
}

// BlobResource is an attached file of base64 data.
func BlobResource(uri, mime, data string) Part {
	return Part{Kind: PartBlobResource, URI: uri, MIME: mime, Data: data}
}

// TextResult is a result of one text.
func TextResult(text string) *Result { return PartsResult(Text(text)) }

// PartsResult is a result of the given parts.
func PartsResult(parts ...Part) *Result { return &Result{Parts: parts} }
