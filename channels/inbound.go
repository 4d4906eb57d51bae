package channels

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
)

// Compose fills in.Text and in.Refs of a message a channel received, the
// same way for every network. text is what the sender typed, already
// neutralised (mediaregistry.Neutralize) by the caller; refs are the
// message's attachments, metadata only.
//
// For a chat no group is registered for, nothing is registered and Text,
// Refs and Links stay empty: only the chat's id and name and the message ids
// reach the sink, enough for an operator to register the chat, and no text
// from strangers reaches the store.
//
// For a registered chat every ref is registered in one call (one
// transaction: the files of one message appear together or not at all)
// and Text is one placeholder per ref, then the typed text, then one line
// per link preview in in.Links (at most MaxLinksPerMessage; see
// renderLink), joined by newlines. A ref that already has an ID was
// registered for an earlier event of the same message (a Slack edit) and
// is only rendered. A registration the store refused is retried like a
// delivery (Inbox): the message waits, unconfirmed, until its refs are
// stored. Only if ctx ends first, or the refs can never be registered
// (mediaregistry.ErrInvalid), the error is logged and the message is kept
// with metadata-only placeholders (RenderMeta) and no refs, so nothing the
// sender typed is lost.
//
// Of a stranger's message two things reach the sink beyond the ids:
// whether it addresses the assistant (Mentioned: what the network said —
// a mention, a reply, a DM to the bot — or the trigger), so botd can offer
// pairing, and the
// text only when it is a short chat command ("/approve ABCD-EF23"), so an
// owner can approve a chat from a direct message.
//
// Compose reports whether the chat is registered.
func (e Env) Compose(ctx context.Context, in *Inbound, text string, refs []mediaregistry.MediaReference) bool {
	links := in.Links
	in.Text, in.Refs, in.Links = "", nil, nil
	if e.Sink == nil || !e.Sink.Registered(in.ChatID) {
		e.stranger(in, text)
		return false
	}
	// A copy: a failed registration must not leave ids in the caller's
	// refs that no row backs.
	refs = append([]mediaregistry.MediaReference(nil), refs...)
	var fresh []*mediaregistry.MediaReference
	for i := range refs {
		if refs[i].ID == "" {
			fresh = append(fresh, &refs[i])
		}
	}
	if len(fresh) > 0 {
		if err := e.register(ctx, *in, fresh); err != nil {
			e.logger().Error("registering media refs failed; keeping the message with metadata-only placeholders",
				"chat", in.ChatID, "id", in.ID, "refs", len(fresh), "err", err)
			for _, r := range fresh {
				r.ID = ""
			}
		}
	}
	previews := renderLinks(links)
	lines := make([]string, 0, len(refs)+1+len(previews))
	for i := range refs {
		r := &refs[i]
		if r.ID == "" {
			lines = append(lines, RenderMeta(r))
			continue
		}
		lines = append(lines, mediaregistry.Render(r))
		in.Refs = append(in.Refs, *r)
	}
	if text != "" {
		lines = append(lines, text)
	}
	lines = append(lines, previews...)
	in.Text = strings.Join(lines, "\n")
	return true
}

// maxStrangerCommand bounds the one kind of stranger's text that reaches
// the sink: a command and a short argument.
const maxStrangerCommand = 64

// stranger fills what of a stranger's message the sink may see (Compose).
func (e Env) stranger(in *Inbound, text string) {
	typed := strings.TrimSpace(text)
	// A direct message addresses the assistant when its network says so
	// (Mentioned): not every DM does (a shared WhatsApp number's).
	if e.AssistantName != "" && groups.MatchTrigger("@"+e.AssistantName, typed) {
		in.Mentioned = true
	}
	if cmd := commandText(typed); cmd != "" {
		in.Text = cmd
	}
}

// commandText is text when it is one line opening with a chat command
// (after an optional mention) and short, else "".
func commandText(text string) string {
	if len(text) > maxStrangerCommand || strings.ContainsAny(text, "\n\r") {
		return ""
	}
	rest := text
	if strings.HasPrefix(rest, "@") {
		_, rest, _ = strings.Cut(rest, " ")
		rest = strings.TrimSpace(rest)
	}
	if !strings.HasPrefix(rest, "/") {
		return ""
	}
	return text
}

func (e Env) register(ctx context.Context, in Inbound, refs []*mediaregistry.MediaReference) error {
	if e.Registry == nil {
		return errors.New("no media registry")
	}
	return e.inbox().retry(ctx, e.logger(), in, func() error {
		err := e.Registry.RegisterAll(ctx, refs...)
		if err != nil {
			// Fresh ids for the next attempt: a write that failed after
			// it committed must not make every retry a duplicate key.
			for _, r := range refs {
				r.ID = ""
			}
		}
		if errors.Is(err, mediaregistry.ErrInvalid) {
			return permanent{err}
		}
		return err
	})
}

func (e Env) logger() *slog.Logger {
	if e.Log == nil {
		return slog.Default()
	}
	return e.Log
}

// RenderMeta is the placeholder of an attachment that has no ref: what was
// sent (kind, name, size, type, caption), without anything to fetch. It is
// used for files botd cannot fetch (a Slack file stored outside Slack) and
// when registering a ref failed.
func RenderMeta(ref *mediaregistry.MediaReference) string {
	r := *ref
	r.ID = ""
	s := mediaregistry.Render(&r)
	// The first "ref:]" is the empty ref field: nothing rendered before it
	// (the name, the MIME type) can contain ']'. The caption after it can,
	// so never search from the end.
	i := strings.Index(s, "ref:]")
	if i < 0 {
		return s // cannot happen: Render always writes the ref field
	}
	head := strings.TrimSuffix(s[:i], " ")
	head = strings.TrimSuffix(strings.TrimSuffix(head, ","), ":")
	return head + "]" + s[i+len("ref:]"):]
}
