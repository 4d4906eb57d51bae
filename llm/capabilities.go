package llm

import (
	"fmt"
	"strings"
)

// modelCaps adjusts what an adapter can carry for models known to take
// less (text-only models behind an OpenAI-compatible API) or more (audio
// and video). Matched by the first prefix of the model id, lower-cased and
// without a "vendor/" path; a model not listed keeps the adapter's
// capabilities.
var modelCaps = []struct {
	prefix string
	set    func(*Capabilities)
}{
	// Text-only, though served by an adapter that carries images.
	{"deepseek", textOnly},
	{"gpt-3.5", textOnly},
	{"o1-mini", textOnly},
	{"o3-mini", textOnly},
	{"qwen2.5-coder", textOnly},
	{"qwq", textOnly},
	{"mistral-small", textOnly}, {"mistral-large", textOnly}, {"mixtral", textOnly}, {"codestral", textOnly},
	{"llama-3.1", textOnly}, {"llama3.1", textOnly}, {"llama-3.3", textOnly}, {"llama3.3", textOnly}, {"llama3:", textOnly}, {"llama3-", textOnly},
	{"phi", textOnly}, {"gemma2", textOnly}, {"kimi-k2", textOnly},
	// Audio (and video) in.
	{"gemini", func(c *Capabilities) { c.Audio, c.Video = true, true }},
	{"gpt-4o-audio", func(c *Capabilities) { c.Audio = true }},
	{"gpt-4o-mini-audio", func(c *Capabilities) { c.Audio = true }},
}

func textOnly(c *Capabilities) { c.Vision, c.Documents, c.Audio, c.Video = false, false, false, false }

// ModelCapabilities is what model can take through an adapter with caps.
func ModelCapabilities(model string, caps Capabilities) Capabilities {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, k := range modelCaps {
		if strings.HasPrefix(m, k.prefix) {
			k.set(&caps)
			break
		}
	}
	return caps
}

// ToolSearcher is an adapter that can search a request's deferred
// tools natively for some of its models (Anthropic's tool search tool).
type ToolSearcher interface {
	ToolSearch(model string) bool
}

// CapabilitiesOf is what model can take through p: the adapter's
// capabilities adjusted for known models (ModelCapabilities), and
// whether p searches deferred tools natively for that model.
func CapabilitiesOf(p Provider, model string) Capabilities {
	caps := ModelCapabilities(model, p.Capabilities())
	if ts, ok := p.(ToolSearcher); ok {
		caps.ToolSearch = ts.ToolSearch(model)
	}
	return caps
}

// needs is what a request relies on: tools, and the media kinds in it.
func needs(req *Request) Capabilities {
	var n Capabilities
	n.Tools = len(req.Tools) > 0
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			mediaNeeds(&n, p)
			if p.ToolResult != nil {
				for _, c := range p.ToolResult.Content {
					mediaNeeds(&n, c)
				}
			}
		}
	}
	return n
}

func mediaNeeds(n *Capabilities, p Part) {
	if p.Media == nil {
		return
	}
	switch mt := strings.ToLower(p.Media.MIME); {
	case strings.HasPrefix(mt, "image/"):
		n.Vision = true
	case strings.HasPrefix(mt, "audio/"):
		n.Audio = true
	case strings.HasPrefix(mt, "video/"):
		n.Video = true
	default:
		n.Documents = true
	}
}

// lacks names what caps cannot carry of need, or "" when it carries all.
func (caps Capabilities) lacks(need Capabilities) string {
	var miss []string
	for _, c := range []struct {
		need, have bool
		what       string
	}{
		{need.Tools, caps.Tools, "tools"}, {need.Vision, caps.Vision, "images"}, {need.Audio, caps.Audio, "audio"},
		{need.Video, caps.Video, "video"}, {need.Documents, caps.Documents, "documents"},
	} {
		if c.need && !c.have {
			miss = append(miss, c.what)
		}
	}
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("cannot take %s", strings.Join(miss, ", "))
}
