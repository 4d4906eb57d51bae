package agent

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/textclip"
	"github.com/botd-dev/botd/store"
)

// A call a tainted run was refused (guard.go) waits for a person: botd
// adds to the run's answer what exactly the call would do and a code; a
// person's later message in the chat that carries the code has botd
// carry out that very call — not the model, whose words may still be a
// page's — before the run that message starts, and that run is told what
// came of it. A page cannot write in the chat, so it cannot confirm; and
// the person sees botd's own account of the call, not the model's.
//
// Pending calls live in memory: a restart forgets them (the person asks
// again); a group keeps the maxPending newest, each for confirmTTL.

// confirmTTL is how long a person has to confirm.
const confirmTTL = 30 * time.Minute

// maxPending bounds the refusals a group keeps waiting for a person.
const maxPending = 8

// pendingConfirm is what a group's people are asked to confirm.
type pendingConfirm struct {
	code  string
	calls []pendingCall
	after int64 // the seq the refusing run answered up to
	until time.Time
}

// confirms are the calls each group's people are asked to confirm, by
// folder.
type confirms struct {
	now func() time.Time
	log *slog.Logger

	mu      sync.Mutex
	pending map[string][]*pendingConfirm
}

// codeAlphabet leaves out letters and digits people mistake for others.
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

func newConfirmCode() string {
	var b [6]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b[:])
}

// offer keeps the refused calls of a run that answered up to seq
// and returns the line botd adds to its answer.
func (cs *confirms) offer(folder string, seq int64, taint string, calls []pendingCall) string {
	p := &pendingConfirm{code: newConfirmCode(), calls: calls, after: seq, until: cs.now().Add(confirmTTL)}
	cs.mu.Lock()
	if cs.pending == nil {
		cs.pending = map[string][]*pendingConfirm{}
	}
	ps := append(cs.pending[folder], p)
	cs.pending[folder] = ps[max(0, len(ps)-maxPending):]
	cs.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "(botd: I read %s in this answer, so I did not do this without a person's go-ahead:", taint)
	for _, c := range calls {
		fmt.Fprintf(&b, "\n- %s: %s %s", c.Reason, c.Tool, textclip.Clip(strings.Join(strings.Fields(string(c.Args)), " "), 600))
	}
	fmt.Fprintf(&b, "\nIf you want it, reply with \"confirm %s\" within %d minutes.)", p.code, int(confirmTTL/time.Minute))
	return b.String()
}

// take returns the calls a person confirmed among msgs (the new
// messages of a run) and forgets them; nil when none.
func (cs *confirms) take(folder string, msgs []store.Message) []pendingCall {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	now := cs.now()
	var keep []*pendingConfirm
	var calls []pendingCall
	for _, p := range cs.pending[folder] {
		switch {
		case now.After(p.until):
		case confirmedBy(p, msgs):
			calls = append(calls, p.calls...)
		default:
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		delete(cs.pending, folder)
	} else {
		cs.pending[folder] = keep
	}
	return calls
}

// confirmedBy reports whether a person's message after p's run carries
// its code as a word.
func confirmedBy(p *pendingConfirm, msgs []store.Message) bool {
	for _, m := range msgs {
		if m.Seq <= p.after || m.FromMe || m.IsBot || isTask(&m) {
			continue
		}
		words := strings.FieldsFunc(m.Text, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		})
		for _, w := range words {
			if strings.EqualFold(w, p.code) {
				return true
			}
		}
	}
	return false
}

// runConfirmed carries out the confirmed calls through the run's tools
// (ts: past the guard) and says what came of each for the model.
func runConfirmed(ctx context.Context, ts ToolSession, calls []pendingCall, log *slog.Logger) string {
	if len(calls) == 0 || ts == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n<confirmed>\nA person in the chat confirmed, with botd's code, what you were refused before; botd did it:")
	for _, c := range calls {
		res, err := ts.Call(ctx, c.Tool, c.Args)
		out := ""
		switch {
		case err != nil:
			out = "failed: " + err.Error()
		default:
			out = strings.TrimSpace(resultText(res))
		}
		log.Info("agent: confirmed call carried out", "tool", c.Tool, "failed", err != nil || (res != nil && res.IsError))
		fmt.Fprintf(&b, "\n- %s: %s", c.Tool, textclip.Clip(out, 1000))
	}
	b.WriteString("\nDo not do it again; tell the chat how it went.\n</confirmed>")
	return b.String()
}
