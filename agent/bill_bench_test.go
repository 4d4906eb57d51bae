package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/doctext/doctexttest"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/mediaregistry"
)

// The token estimate the bill is measured by is the product's own
// (split.go: textTokens, imageTokens), documented there so the figures
// can be checked and botd usage splits a run's tokens the same way.

// billModel answers like a careful agent (it fetches the media a question
// is about, then answers) and reports usage by the estimate above. It
// simulates a provider's prompt cache: the longest prefix a request shares
// with an earlier one of the run, counted from the serialised request,
// is billed as cache read.
type billModel struct {
	mu      sync.Mutex
	last    []byte // the previous request, serialised
	input   int64  // all prompt tokens
	cached  int64  // of which read from the cache (later turns of a run)
	cross   int64  // of which a cache that outlives runs would read
	output  int64
	multi   [2]int64 // multi-turn runs: prompt tokens without and with the cache
	turn    int
	runTok  [2]int64
	fetches int
}

var (
	askedAbout = regexp.MustCompile(`Q-(photo|voice|doc)-(\d+)`)
	// answeredRe takes out what a run must not answer again.
	answeredRe = regexp.MustCompile(`(?s)<answered>.*?</answered>\n?|<message [^>]*from_you="true"[^>]*>.*?</message>\n?|<media_notes>.*?</media_notes>`)
)

func (m *billModel) generate(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
	body := cacheOrder(req)
	tokens := textTokens(req.System)
	for _, t := range req.Tools {
		tokens += textTokens(t.Name + t.Description + string(t.Parameters))
	}
	for _, msg := range req.Messages {
		for _, p := range msg.Parts {
			tokens += partTokens(p)
			if p.ToolResult != nil {
				for _, c := range p.ToolResult.Content {
					tokens += partTokens(c)
				}
			}
			if p.ToolCall != nil {
				tokens += textTokens(string(p.ToolCall.Args))
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	common := 0
	for common < len(body) && common < len(m.last) && body[common] == m.last[common] {
		common++
	}
	cached, cross := int64(0), int64(0)
	if len(body) > 0 {
		cross = tokens * int64(common) / int64(len(body))
	}
	if len(req.Messages) > 1 { // a later turn of the run
		cached = cross
	}
	m.last = body
	m.input += tokens
	m.cached += cached
	m.cross += cross
	if len(req.Messages) == 1 {
		m.turn = 0
		m.runTok = [2]int64{}
	}
	m.turn++
	m.runTok[0] += tokens
	m.runTok[1] += tokens - cached
	var res *llm.Result
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleTool {
		res = textResult("Here is what I found.")
		if m.turn > 1 {
			m.multi[0] += m.runTok[0]
			m.multi[1] += m.runTok[1]
		}
	} else if q := askedAbout.FindAllStringSubmatch(answeredRe.ReplaceAllString(userText(*req), ""), -1); len(q) > 0 {
		ref := fmt.Sprintf("tg_%sRef%07d", strings.ToUpper(q[len(q)-1][1][:1]), atoi(q[len(q)-1][2]))
		m.fetches++
		res = toolCall("c1", "fetch_media", `{"mediaRef":"`+ref+`"}`)
	} else {
		res = textResult("Sure.")
	}
	res.Usage = llm.Usage{InputTokens: tokens - cached, CacheReadTokens: cached, OutputTokens: 20}
	m.output += 20
	return res, nil
}

func partTokens(p llm.Part) int64 {
	switch {
	case p.Media != nil && strings.HasPrefix(p.Media.MIME, "image/"):
		if f, err := os.Open(p.Media.Path); err == nil {
			defer f.Close()
			if cfg, _, err := image.DecodeConfig(f); err == nil {
				return imageTokens(cfg.Width, cfg.Height)
			}
		}
		return 1600
	default:
		return textTokens(p.Text)
	}
}

func atoi(s string) int { n := 0; fmt.Sscan(s, &n); return n }

func plainPNG(b testing.TB, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 0xC0
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkGroupDayBill replays a busy group's day through the real agent
// loop: 500 messages, 50 photos (1024×768), 10 voice notes, 5 documents,
// and 20 questions, of which 3 need a photo, 2 a voice note and 1 a
// document. It reports botd's tokens against an eager baseline that, like
// peers, puts every image, transcript and document text of the window
// into every prompt; and what the prompt cache saves in multi-turn runs.
func BenchmarkGroupDayBill(b *testing.B) {
	var report [7]int64
	var bill dayBill
	var fixed [3]int64 // a run's first request: system prompt, tools, conversation
	for b.Loop() {
		m := &billModel{}
		h := newHarness(b, newFakeLLM(m.generate), func(o *Options) {
			at(time.Date(2025, 3, 1, 23, 0, 0, 0, time.UTC))(o) // the harness day: 14:01 on
			o.Run.EagerTools = os.Getenv("BOTD_BILL_EAGER_TOOLS") != ""
		})
		photo := plainPNG(b, 1024, 768)
		transcript := strings.Repeat("we should meet at the station at nine and bring the tickets ", 5)
		docText := strings.Repeat("The budget for the trip covers travel, food and the museum. ", 80)
		docx := doctexttest.DOCX(doctexttest.P("", docText))
		perMedia := map[string]int64{}
		for i := 0; i < 50; i++ {
			ref := fmt.Sprintf("tg_PRef%07d", i)
			h.media[ref] = fakeMedia{Kind: "Image", Name: "photo.png", MIME: "image/png", Data: photo}
			perMedia[ref] = imageTokens(1024, 768)
		}
		for i := 0; i < 10; i++ {
			ref := fmt.Sprintf("tg_VRef%07d", i)
			h.media[ref] = fakeMedia{Kind: "Voice", Name: "voice.ogg", MIME: "audio/ogg", Data: []byte("OggS voice"), Transcript: transcript}
			perMedia[ref] = textTokens(transcript)
		}
		for i := 0; i < 5; i++ {
			ref := fmt.Sprintf("tg_DRef%07d", i)
			h.media[ref] = fakeMedia{Kind: "Document", Name: "budget.docx",
				MIME: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Data: docx}
			perMedia[ref] = textTokens(docText)
		}
		h.start()
		photos, voices, docs, questions := 0, 0, 0, 0
		asks := map[int]string{60: "photo-1", 140: "photo-12", 210: "voice-3", 260: "photo-30", 330: "doc-2", 420: "voice-8"}
		for i := 0; i < 500; i++ {
			var text string
			switch {
			case asks[i] != "":
				text = "@Andy what about Q-" + asks[i] + "?"
				questions++
			case i%25 == 7 && questions < 20:
				text = "@Andy quick question number " + fmt.Sprint(i)
				questions++
			case i%10 == 3 && photos < 50:
				text = fmt.Sprintf("[Image: photo.png, 40KB, image/png, ref:tg_PRef%07d] from the trip", photos)
				photos++
			case i%50 == 11 && voices < 10:
				text = fmt.Sprintf("[Voice: 0:12, audio/ogg, ref:tg_VRef%07d]", voices)
				voices++
			case i%100 == 17 && docs < 5:
				text = fmt.Sprintf("[Document: budget.docx, 12KB, %s, ref:tg_DRef%07d]", mediaregistry.Ext("x"), docs)
				docs++
			default:
				text = fmt.Sprintf("message %d: just chatting about the plans for the weekend", i)
			}
			h.say(famChat, "Ann", text)
			if strings.HasPrefix(text, "@Andy") {
				h.idle()
			}
		}
		h.idle()
		// The eager baselines, without fetches: the same prompts with every
		// placeholder in them replaced by its content; and a peer's
		// session, which keeps every piece of media posted so far in every
		// later prompt.
		// A cache that outlives runs reads, of each eager prompt, the share
		// its text has in common with the one before.
		var eager, session, eagerCross int64
		seen := map[string]bool{}
		var sessionMedia int64
		prev := ""
		for _, r := range m.firstRequests(h) {
			// An eager pipeline sends every tool's schema too.
			e := r.tokens - r.tools + r.eagerTools
			for _, p := range mediaregistry.Parse(r.text) {
				e += perMedia[p.Ref]
				if !seen[p.Ref] {
					seen[p.Ref] = true
					sessionMedia += perMedia[p.Ref]
				}
			}
			eager += e
			eagerCross += e * int64(commonPrefix(prev, r.full)) / int64(max(len(r.full), 1))
			prev = r.full
			session += r.tokens - r.tools + r.eagerTools + sessionMedia
		}
		h.stop()
		var sys, tls, conv int64
		for _, r := range m.firstRequests(h) {
			sys, tls, conv = sys+r.system, tls+r.tools, conv+r.tokens-r.system-r.tools
		}
		if n := int64(len(m.firstRequests(h))); n > 0 {
			fixed = [3]int64{sys / n, tls / n, conv / n}
		}
		report = [7]int64{m.input, m.cached, eager, m.multi[0], m.multi[1], int64(m.fetches), session}
		bill = dayBill{botd: m.input, botdInRun: m.cached, botdCross: m.cross, output: m.output, runs: int64(len(m.firstRequests(h))),
			eager: eager, eagerCross: eagerCross, session: session}
	}
	if testing.Verbose() || os.Getenv("BOTD_BILL_TABLE") != "" {
		fmt.Fprint(os.Stderr, bill.table())
	}
	b.ReportMetric(float64(report[0]), "botd-input-tokens")
	b.ReportMetric(float64(report[0]-report[1]), "botd-uncached-input-tokens")
	b.ReportMetric(float64(report[2]), "eager-input-tokens")
	b.ReportMetric(100*float64(report[0])/float64(report[2]), "botd-%-of-eager")
	b.ReportMetric(float64(report[6]), "eager-session-input-tokens")
	b.ReportMetric(100*float64(report[0])/float64(report[6]), "botd-%-of-eager-session")
	if report[3] > 0 {
		b.ReportMetric(100*float64(report[4])/float64(report[3]), "multi-turn-%-with-cache")
	}
	b.ReportMetric(float64(report[5]), "fetches")
	b.ReportMetric(float64(fixed[0]), "first-request-system-tokens")
	b.ReportMetric(float64(fixed[1]), "first-request-tool-tokens")
	b.ReportMetric(float64(fixed[2]), "first-request-conversation-tokens")
	b.ReportMetric(float64(report[0]-bill.botdCross), "botd-uncached-input-tokens-cross-run")
	b.ReportMetric(bill.usd(bill.botd, 0, 3, 0), "botd-usd-no-cache")
	b.ReportMetric(bill.usd(bill.botd, bill.botdCross, 3, 0.75), "botd-usd-implicit-cache")
	b.ReportMetric(bill.usd(bill.eager, 0, 3, 0), "eager-usd-no-cache")
}

// dayBill prices a day at Claude Sonnet's list prices per MTok: input $3,
// output $15, cache read $0.30; a cache write costs $3.75 (five-minute
// cache) or $6 (one hour, which runs minutes to an hour apart need).
// Every uncached input token of a cached request counts as a write,
// which is what the breakpoint after the last message does. An implicit
// cache (OpenAI, Gemini) has no write premium: the "implicit" rows price
// uncached tokens at $3 and reads at $0.75 (a quarter, GPT-4.1's ratio).
type dayBill struct {
	botd, botdInRun, botdCross int64 // input tokens; of them cached within runs, across runs
	output, runs               int64
	eager, eagerCross, session int64
}

// usd prices input tokens of which cached were read, writing the rest at
// write $/MTok and reading at read $/MTok.
func (d dayBill) usd(input, cached int64, write, read float64) float64 {
	return (float64(input-cached)*write + float64(cached)*read + float64(d.output)*15) / 1e6
}

// table is the README's bill table.
func (d dayBill) table() string {
	row := func(name string, input, cached int64, write, read float64) string {
		return fmt.Sprintf("| %s | %.1fk | %.1fk | $%.2f |\n", name, float64(input)/1000, float64(input-cached)/1000, d.usd(input, cached, write, read))
	}
	return "| prompt strategy (one busy group's day) | input tokens | of them uncached | cost at Sonnet list prices |\n|---|---|---|---|\n" +
		row("botd, no caching", d.botd, 0, 3, 0) +
		row("botd, explicit cache within a run (5 min writes)", d.botd, d.botdInRun, 3.75, 0.30) +
		row("botd, explicit cache across runs (1 h writes)", d.botd, d.botdCross, 6, 0.30) +
		row("botd, implicit cache across runs", d.botd, d.botdCross, 3, 0.75) +
		row("eager, same window, no caching", d.eager, 0, 3, 0) +
		row("eager, same window, implicit cache across runs", d.eager, d.eagerCross, 3, 0.75) +
		row("eager session (keeps every medium), no caching", d.session, 0, 3, 0)
}

// cacheOrder serialises a request in the order providers cache its
// prefix: tools, then the system prompt, then the messages.
func cacheOrder(req *llm.Request) []byte {
	tools, _ := json.Marshal(req.Tools)
	msgs, _ := json.Marshal(req.Messages)
	return append(append(append(tools, req.System...), msgs...), req.Model...)
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

type firstRequest struct {
	text   string
	full   string // system prompt, tools and text: what a prefix cache sees
	tokens int64
	// system and tools are the fixed parts of tokens; eagerTools what
	// every tool's schema costs, as an eager pipeline sends them.
	system, tools, eagerTools int64
}

// firstRequests are the opening requests of every run (one user turn).
func (m *billModel) firstRequests(h *harness) []firstRequest {
	var out []firstRequest
	for _, r := range h.llm.requests() {
		if len(r.Messages) != 1 {
			continue
		}
		sys, tls, eager := textTokens(r.System), int64(0), int64(0)
		for _, tl := range r.Tools {
			tls += textTokens(tl.Name + tl.Description + string(tl.Parameters))
			if tl.Name != llm.LoadTools {
				eager += textTokens(tl.Name + tl.Description + string(tl.Parameters))
			}
		}
		for _, tl := range r.Deferred {
			eager += textTokens(tl.Name + tl.Description + string(tl.Parameters))
		}
		out = append(out, firstRequest{text: userText(r), full: string(cacheOrder(&r)), tokens: sys + tls + textTokens(userText(r)),
			system: sys, tools: tls, eagerTools: eager})
	}
	return out
}
