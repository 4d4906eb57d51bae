package agent

import (
	"encoding/base64"
	"image"
	"io"
	"math/bits"
	"os"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
)

// Where a run's input tokens go (issue 43: "the bill shows it"). A
// provider reports one figure per call; botd splits it over what the
// request held (the fixed system prompt, the tools' schemas, the
// conversation, media) in the shares of an estimate of each part, the
// same estimate BenchmarkGroupDayBill measures the bill by, so the
// benchmark and the product count alike:
//
//   - text costs bytes/4 tokens (rounded up): the system prompt; each
//     tool's name, description and parameter schema; messages' text and
//     reasoning, tool calls' arguments, tool results' text;
//   - an image of w×h pixels costs w·h/750 tokens (Anthropic's rule)
//     after the provider scales it to at most 1568 px on its longest
//     side; one whose header cannot be read costs imageFlatTokens;
//   - audio and video cost their size at the rates of a typical voice
//     note and video (audioBytesPerToken, videoBytesPerToken);
//   - a document or other media costs mediaFlatTokens, a page or two: a
//     PDF is billed by its pages, which its size does not tell.
//
// Only Request.Tools are counted: tools a provider's own tool search
// holds back (Request.Deferred) cost nothing until the model loads them,
// and then they are in Tools.

// textTokens is the estimate of a text of len(s) bytes.
func textTokens(s string) int64 { return bytesTokens(len(s)) }

// bytesTokens is the estimate of n bytes of text.
func bytesTokens(n int) int64 { return int64(n+3) / 4 }

// imageTokens is the estimate of a w×h image.
func imageTokens(w, h int) int64 {
	if m := max(w, h); m > 1568 {
		w, h = w*1568/m, h*1568/m
	}
	return int64(w*h+749) / 750
}

const (
	// imageFlatTokens is an image whose size is unknown: about a
	// megapixel's worth (1092×1092).
	imageFlatTokens = 1600
	// mediaFlatTokens is a document or other media the estimate cannot
	// size.
	mediaFlatTokens = 1600
	// audioBytesPerToken: a 16 kbit/s voice note (2,000 bytes a second)
	// at Gemini's 32 tokens a second.
	audioBytesPerToken = 62
	// videoBytesPerToken: a 1 Mbit/s video (125,000 bytes a second) at
	// Gemini's 263 tokens a second.
	videoBytesPerToken = 475
	// maxImageHeader bounds what reading an image's size reads: metadata
	// (EXIF, ICC) comes before a JPEG's frame header, never megabytes.
	maxImageHeader = 2 << 20
)

// estimateSplit is the estimate of req's input tokens, by part.
func estimateSplit(req *llm.Request) store.TokenSplit {
	e := store.TokenSplit{Prompt: textTokens(req.System)}
	for _, t := range req.Tools {
		e.Tools += bytesTokens(len(t.Name) + len(t.Description) + len(t.Parameters)) // as one text, unjoined
	}
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			addPartEstimate(&e, p)
		}
	}
	return e
}

func addPartEstimate(e *store.TokenSplit, p llm.Part) {
	switch {
	case p.Media != nil:
		e.Media += mediaTokens(p.Media)
	case p.ToolCall != nil:
		e.Conversation += bytesTokens(len(p.ToolCall.Args))
	case p.ToolResult != nil:
		for _, c := range p.ToolResult.Content {
			addPartEstimate(e, c)
		}
	default:
		e.Conversation += textTokens(p.Text)
	}
}

// mediaTokens is the estimate of one media part.
func mediaTokens(m *llm.Media) int64 {
	mime := strings.ToLower(m.MIME)
	switch {
	case strings.HasPrefix(mime, "image/"):
		if w, h, ok := imageSize(m); ok {
			return imageTokens(w, h)
		}
		return imageFlatTokens
	case strings.HasPrefix(mime, "audio/"):
		if n, ok := mediaBytes(m); ok {
			return max(1, n/audioBytesPerToken)
		}
	case strings.HasPrefix(mime, "video/"):
		if n, ok := mediaBytes(m); ok {
			return max(1, n/videoBytesPerToken)
		}
	}
	return mediaFlatTokens
}

// imageSize reads an image's dimensions from its header, from its file
// or its inline bytes; ok is false for a URL or a header not understood.
func imageSize(m *llm.Media) (w, h int, ok bool) {
	var r io.Reader
	switch {
	case m.Path != "":
		f, err := os.Open(m.Path)
		if err != nil {
			return 0, 0, false
		}
		defer f.Close()
		r = f
	case m.Data != "":
		r = base64.NewDecoder(base64.StdEncoding, strings.NewReader(m.Data))
	default:
		return 0, 0, false
	}
	cfg, _, err := image.DecodeConfig(io.LimitReader(r, maxImageHeader))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, 0, false
	}
	return cfg.Width, cfg.Height, true
}

// mediaBytes is the size of a media part's bytes; ok is false for a URL
// or a file gone.
func mediaBytes(m *llm.Media) (int64, bool) {
	switch {
	case m.Path != "":
		fi, err := os.Stat(m.Path)
		if err != nil {
			return 0, false
		}
		return fi.Size(), true
	case m.Data != "":
		return int64(base64.StdEncoding.DecodedLen(len(m.Data))), true
	}
	return 0, false
}

// apportion shares total, the input tokens a provider reported for a
// call, over the parts of est in proportion to them, rounding so the
// parts sum to total exactly (the largest remainders get the leftover
// tokens, ties in the order prompt, tools, conversation, media). A
// request estimated at nothing is all conversation.
func apportion(est store.TokenSplit, total int64) store.TokenSplit {
	if total <= 0 {
		return store.TokenSplit{}
	}
	sum := est.Total()
	if sum <= 0 {
		return store.TokenSplit{Conversation: total}
	}
	parts := [4]int64{est.Prompt, est.Tools, est.Conversation, est.Media}
	var out, rem [4]int64
	left := total
	for i, p := range parts {
		// In 128 bits: a provider's figure times an estimate may not
		// fit in 64; the quotient does (p <= sum).
		hi, lo := bits.Mul64(uint64(total), uint64(p))
		q, r := bits.Div64(hi, lo, uint64(sum))
		out[i], rem[i] = int64(q), int64(r)
		left -= out[i]
	}
	for ; left > 0; left-- {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		out[best]++
		rem[best] = -1
	}
	return store.TokenSplit{Prompt: out[0], Tools: out[1], Conversation: out[2], Media: out[3]}
}

// addSplit adds one model call's input tokens (u: fresh, cache read and
// cache written), apportioned over req as it was sent, to the run's
// split.
func addSplit(rec *store.AgentRun, req *llm.Request, u llm.Usage) {
	s := apportion(estimateSplit(req), u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens)
	if rec.Split == nil {
		rec.Split = &store.TokenSplit{}
	}
	rec.Split.Add(s)
}

// splitKnown gives a run that made no model call (or none that reported
// usage) its split of nothing, so only runs recorded before botd split
// the bill read as unknown.
func splitKnown(rec *store.AgentRun) {
	if rec.Split == nil {
		rec.Split = &store.TokenSplit{}
	}
}
