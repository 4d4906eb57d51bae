package matrix

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// ChatID is the botd chat id of a Matrix room.
func ChatID(r id.RoomID) string { return Name + ":" + string(r) }

// maxMembers bounds the display names kept per room: a huge public room
// must not grow memory without end; past it, senders show by user id.
const maxMembers = 5000

// room is what the sync told botd about one joined room.
type room struct {
	name      string
	alias     string
	joined    int // members, from the sync summary; 0 when not told
	members   map[id.UserID]string
	encrypted bool // end-to-end encrypted
	refused   bool // encrypted while botd's encryption is off: logged once
	// stateChecked: the homeserver was asked this run whether the room
	// is encrypted (before a send into a room whose state botd had not seen).
	stateChecked bool
}

func (m *Matrix) roomLocked(r id.RoomID) *room {
	rm := m.rooms[r]
	if rm == nil {
		rm = &room{members: map[id.UserID]string{}}
		m.rooms[r] = rm
	}
	return rm
}

// EncryptedRooms lists the end-to-end encrypted chats botd is in and
// cannot read because its encryption is off (CryptoOff says why): for
// the dashboard to show. Empty while encryption is on.
func (m *Matrix) EncryptedRooms() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for r, rm := range m.rooms {
		if rm.refused {
			out = append(out, ChatID(r))
		}
	}
	return out
}

// handleSync hands one /sync answer to the sink, room by room, each
// room's events in timeline order. The first sync of a fresh start
// (no saved position) is the rooms' history: its state is learned, its
// messages are not delivered.
func (m *Matrix) handleSync(ctx context.Context, resp *mautrix.RespSync, initial bool) {
	if resp == nil {
		return
	}
	eng, _ := m.cryptoState()
	if eng != nil {
		// Room keys first: a key sent with its message is there when the
		// message is decrypted below.
		if err := safely(func() { eng.processSync(ctx, resp) }); err != nil {
			m.log.Warn("matrix: processing the sync's encryption keys failed", "err", err)
		}
		m.retryPending(ctx, eng)
	}
	for r, inv := range resp.Rooms.Invite {
		if inv != nil {
			m.noteInvite(r, inv.State.Events)
		}
	}
	for r := range resp.Rooms.Leave {
		m.mu.Lock()
		delete(m.rooms, r)
		m.mu.Unlock()
	}
	skipped := 0
	for r, jr := range resp.Rooms.Join {
		if jr == nil {
			continue
		}
		m.mu.Lock()
		rm := m.roomLocked(r)
		if n := jr.Summary.JoinedMemberCount; n != nil && *n >= 0 {
			rm.joined = *n
		}
		delete(m.invites, r)
		m.mu.Unlock()
		for _, evt := range jr.State.Events {
			m.applyState(ctx, r, evt)
		}
		for _, evt := range jr.Timeline.Events {
			if evt == nil || evt.ID == "" || evt.Sender == "" {
				continue // not an event a homeserver serves
			}
			evt.RoomID = r
			if evt.StateKey != nil {
				m.applyState(ctx, r, evt)
				continue
			}
			switch evt.Type {
			case event.EventEncrypted:
				m.markEncrypted(r)
				if eng == nil {
					continue
				}
				if initial {
					skipped++
					continue
				}
				m.handleEncrypted(ctx, eng, r, evt)
			case event.EventMessage, event.EventSticker:
				if initial {
					skipped++
					continue
				}
				m.handleMessage(ctx, r, evt)
			}
		}
	}
	if skipped > 0 {
		m.log.Info("matrix: first sync; the rooms' earlier messages are history and were not delivered", "messages", skipped)
	}
	m.joinRegistered(ctx)
}

// applyState learns a room's name, members and encryption.
func (m *Matrix) applyState(ctx context.Context, r id.RoomID, evt *event.Event) {
	if evt == nil || evt.StateKey == nil {
		return
	}
	switch evt.Type {
	case event.StateRoomName, event.StateCanonicalAlias, event.StateMember, event.StateEncryption, event.StateHistoryVisibility:
	default:
		return
	}
	if evt.Content.Parsed == nil {
		if err := evt.Content.ParseRaw(evt.Type); err != nil {
			return
		}
	}
	evt.RoomID = r
	if eng, _ := m.cryptoState(); eng != nil {
		if err := safely(func() { eng.updateState(ctx, evt) }); err != nil {
			m.log.Warn("matrix: keeping a room's encryption state failed", "chat", ChatID(r), "err", err)
		}
	}
	if evt.Type == event.StateEncryption {
		m.markEncrypted(r)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rm := m.roomLocked(r)
	switch c := evt.Content.Parsed.(type) {
	case *event.RoomNameEventContent:
		rm.name = c.Name
	case *event.CanonicalAliasEventContent:
		rm.alias = string(c.Alias)
	case *event.MemberEventContent:
		u := id.UserID(*evt.StateKey)
		switch c.Membership {
		case event.MembershipJoin, event.MembershipInvite:
			if _, ok := rm.members[u]; ok || len(rm.members) < maxMembers {
				rm.members[u] = c.Displayname
			}
		default:
			delete(rm.members, u)
		}
	}
}

// markEncrypted records an end-to-end encrypted room; with botd's
// encryption off it says once that the room is refused, and why.
func (m *Matrix) markEncrypted(r id.RoomID) {
	m.mu.Lock()
	rm := m.roomLocked(r)
	rm.encrypted = true
	refuse := m.crypto == nil && !rm.refused
	rm.refused = rm.refused || m.crypto == nil
	reason := m.cryptoOff
	m.mu.Unlock()
	if refuse {
		if reason == nil {
			reason = errors.New("end-to-end encryption is not running")
		}
		m.log.Warn("matrix room is end-to-end encrypted; botd cannot read it (end-to-end encryption is off: "+reason.Error()+")",
			"chat", ChatID(r))
	}
}

// roomEncrypted reports whether room r is end-to-end encrypted: known
// from this run's sync or from the crypto store (which keeps it across
// restarts), else asked of the homeserver once per room and run, so
// nothing goes in the clear into a room whose state botd has not seen
// (one encrypted before this version kept a crypto store, or while its
// encryption is off after a restart).
func (m *Matrix) roomEncrypted(ctx context.Context, r id.RoomID) (bool, error) {
	m.mu.Lock()
	rm := m.roomLocked(r)
	known, checked := rm.encrypted, rm.stateChecked
	eng := m.crypto
	m.mu.Unlock()
	if known || (eng != nil && eng.isEncrypted(ctx, r)) {
		return true, nil
	}
	if checked {
		return false, nil
	}
	var c event.EncryptionEventContent
	err := m.cli.StateEvent(ctx, r, event.StateEncryption, "", &c)
	switch {
	case errors.Is(err, mautrix.MNotFound):
	case err != nil:
		return false, fmt.Errorf("matrix: checking whether %s is end-to-end encrypted: %s", ChatID(r), m.redact(err.Error()))
	}
	m.mu.Lock()
	rm.stateChecked = true
	m.mu.Unlock()
	if err != nil || c.Algorithm == "" {
		return false, nil
	}
	empty := ""
	m.applyState(ctx, r, &event.Event{Type: event.StateEncryption, StateKey: &empty, RoomID: r, Content: event.Content{Parsed: &c}})
	return true, nil
}

// noteInvite remembers an invite. botd joins only rooms a group has
// registered: anyone can invite a bot, and a joined room's messages
// would reach the store.
func (m *Matrix) noteInvite(r id.RoomID, state []*event.Event) {
	var inviter id.UserID
	me := m.Me()
	for _, evt := range state {
		if evt != nil && evt.Type == event.StateMember && evt.StateKey != nil && id.UserID(*evt.StateKey) == me {
			inviter = evt.Sender
		}
	}
	m.mu.Lock()
	_, known := m.invites[r]
	m.invites[r] = inviter
	m.mu.Unlock()
	if !known && !m.env.Sink.Registered(ChatID(r)) {
		m.log.Info("matrix: invited to a room no group has registered; botd joins once it is registered",
			"chat", ChatID(r), "inviter", inviter)
	}
}

// joinRegistered joins the rooms botd was invited to whose chat a group
// has registered meanwhile.
func (m *Matrix) joinRegistered(ctx context.Context) {
	m.mu.Lock()
	var todo []id.RoomID
	for r := range m.invites {
		if m.env.Sink.Registered(ChatID(r)) {
			todo = append(todo, r)
		}
	}
	m.mu.Unlock()
	for _, r := range todo {
		if _, err := m.cli.JoinRoomByID(ctx, r); err != nil {
			m.log.Warn("matrix: joining an invited room failed", "chat", ChatID(r), "err", m.redact(err.Error()))
			if !errors4xx(err) {
				continue // try again after the next sync
			}
		} else {
			m.log.Info("matrix: joined an invited room", "chat", ChatID(r))
		}
		m.mu.Lock()
		delete(m.invites, r)
		m.mu.Unlock()
	}
}

// errors4xx reports a refusal (the invite was withdrawn, the room is
// gone): retrying will not help.
func errors4xx(err error) bool {
	var he mautrix.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		return he.Response.StatusCode >= 400 && he.Response.StatusCode < 500 && he.Response.StatusCode != 429
	}
	return false
}

// handleMessage turns one m.room.message or m.sticker into an Inbound.
func (m *Matrix) handleMessage(ctx context.Context, r id.RoomID, evt *event.Event) {
	if m.isStopped() {
		return
	}
	in, text, refs, ok := m.inbound(r, evt)
	if !ok {
		return
	}
	mentioned := in.Mentioned
	if !m.env.Compose(ctx, &in, text, refs) {
		// Not a group of ours: only enough for an operator to find and
		// register the chat (and whether it addressed the bot, for
		// pairing). No refs, no text from strangers.
		m.deliver(ctx, in)
		return
	}
	if in.Text == "" {
		return
	}
	in.Mentioned = mentioned
	if mentioned && m.env.AssistantName != "" {
		in.Text = withTrigger(in.Text, "@"+m.env.AssistantName, m.names(r)...)
	}
	m.deliver(ctx, in)
}

// deliver returns once the store holds in (channels.Env.Deliver retries
// while the store fails, holding up the sync loop, so no later /sync
// confirms the batch). If receiving stopped first, the batch is marked
// unstored and its position is not saved: the next start syncs it again.
func (m *Matrix) deliver(ctx context.Context, in channels.Inbound) {
	if err := m.env.Deliver(ctx, in); err != nil {
		m.mu.Lock()
		m.unstored = true
		m.mu.Unlock()
	}
}

// takeUnstored reports whether a message of the batch just handled did
// not reach the store, and clears the mark.
func (m *Matrix) takeUnstored() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.unstored
	m.unstored = false
	return u
}

// inbound reads one event: the message's metadata, what the sender
// typed (neutralised), and its attachment as a ref without download.
// In.Mentioned says whether the event addresses the bot.
func (m *Matrix) inbound(r id.RoomID, evt *event.Event) (channels.Inbound, string, []mediaregistry.MediaReference, bool) {
	var in channels.Inbound
	if evt.Content.Parsed == nil {
		if err := evt.Content.ParseRaw(evt.Type); err != nil {
			m.log.Debug("matrix: undecodable event", "chat", ChatID(r), "id", evt.ID, "err", err)
			return in, "", nil, false
		}
	}
	c, ok := evt.Content.Parsed.(*event.MessageEventContent)
	if !ok || c == nil {
		return in, "", nil, false
	}
	chat := ChatID(r)
	m.mu.Lock()
	rm := m.roomLocked(r)
	me := m.me
	in = channels.Inbound{
		ChatID:     chat,
		ChatName:   rm.title(r),
		IsGroup:    rm.joined != 2,
		ID:         string(evt.ID),
		SenderID:   string(evt.Sender),
		SenderName: rm.senderName(evt.Sender),
		Time:       time.UnixMilli(evt.Timestamp),
		FromMe:     me != "" && evt.Sender == me,
	}
	m.mu.Unlock()
	if evt.Sender == me {
		m.sent.add(string(evt.ID))
	}
	rel := c.RelatesTo
	if orig := rel.GetReplaceID(); orig != "" {
		// An edit: the message keeps its id, the new content replaces
		// the text (m.new_content, without the "* " fallback).
		if c.NewContent == nil {
			return in, "", nil, false
		}
		in.Edit, in.ID = true, string(orig)
		nc := *c.NewContent
		c = &nc
	}
	if parent := rel.GetThreadParent(); parent != "" {
		in.ThreadID = string(parent)
		in.ReplyTo = string(parent)
	}
	if reply := rel.GetNonFallbackReplyTo(); reply != "" {
		in.ReplyTo = string(reply)
	}
	if c.RelatesTo == nil {
		c.RelatesTo = rel // RemoveReplyFallback needs to know it is a reply
	}
	c.RemoveReplyFallback()
	if rel.GetReplyTo() != "" {
		// Older clients quote the message replied to in the body too,
		// without HTML to tell by.
		c.Body = event.TrimReplyFallbackText(c.Body)
	}
	// m.notice is what bots post: it never addresses the assistant, so
	// two bots in a room cannot answer each other forever.
	in.IsBot = in.FromMe || c.MsgType == event.MsgNotice
	body := c.Body
	if c.Body == "" && c.FormattedBody == "" && c.URL == "" && c.File == nil {
		return in, "", nil, false // redacted, or empty
	}
	var refs []mediaregistry.MediaReference
	text := ""
	switch {
	case evt.Type == event.EventSticker:
		refs = extract(chat, evt, c, mediaregistry.Sticker)
	case c.MsgType == event.MsgImage, c.MsgType == event.MsgVideo, c.MsgType == event.MsgAudio, c.MsgType == event.MsgFile:
		refs = extract(chat, evt, c, "")
		if len(refs) == 0 {
			text = mediaregistry.Neutralize(c.GetCaption())
		}
	case c.MsgType == event.MsgEmote:
		text = mediaregistry.Neutralize("* " + in.SenderName + " " + body)
	case c.MsgType == event.MsgLocation:
		text = mediaregistry.Neutralize(strings.TrimSpace(body + " (location " + c.GeoURI + ")"))
	default: // m.text, m.notice and any type a client invents: its body
		text = mediaregistry.Neutralize(body)
	}
	if !in.IsBot {
		in.Mentioned = !in.IsGroup || m.addresses(r, c, body, in.ReplyTo)
	}
	return in, text, refs, true
}

// addresses reports whether a message speaks to the bot: the bot in
// m.mentions (clients put the people they pill or reply to there), its
// name or user id in the text, or a reply to one of its messages.
func (m *Matrix) addresses(r id.RoomID, c *event.MessageEventContent, body, replyTo string) bool {
	me := m.Me()
	if me == "" {
		return false
	}
	if c.Mentions != nil {
		for _, u := range c.Mentions.UserIDs {
			if u == me {
				return true
			}
		}
	}
	if replyTo != "" && m.sent.has(replyTo) {
		return true
	}
	for _, n := range m.names(r) {
		if indexName(body, n) >= 0 {
			return true
		}
	}
	return false
}

// names are what the bot is called in room r: its user id, its display
// name there, its localpart.
func (m *Matrix) names(r id.RoomID) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.me == "" {
		return nil
	}
	out := []string{string(m.me)}
	if rm := m.rooms[r]; rm != nil {
		if dn := strings.TrimSpace(rm.members[m.me]); dn != "" {
			out = append(out, dn)
		}
	}
	if local, _, err := m.me.Parse(); err == nil && local != "" {
		out = append(out, local)
	}
	return out
}

func (rm *room) title(r id.RoomID) string {
	switch {
	case rm.name != "":
		return rm.name
	case rm.alias != "":
		return rm.alias
	}
	return string(r)
}

func (rm *room) senderName(u id.UserID) string {
	if n := strings.TrimSpace(rm.members[u]); n != "" {
		return n
	}
	if local, _, err := u.Parse(); err == nil && local != "" {
		return local
	}
	return string(u)
}

// indexName finds name as a whole word in text (case-insensitive) and
// returns its byte offset, or -1. "@name" and "name:" match too.
func indexName(text, name string) int {
	if name == "" {
		return -1
	}
	lower, needle := strings.ToLower(text), strings.ToLower(name)
	if len(lower) != len(text) {
		// Lowering changed byte lengths: offsets would not map back.
		lower, needle = text, name
	}
	for from := 0; from <= len(lower); {
		i := strings.Index(lower[from:], needle)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(needle)
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (i == 0 || !wordRune(before)) && (end == len(text) || !wordRune(after)) {
			return i
		}
		from = end
	}
	return -1
}

func wordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// withTrigger makes a mention of the bot read as the assistant's trigger
// at the start of the text: "botd: hi" → "@Andy hi", "hi botd" →
// "@Andy hi botd". Text already starting with the trigger is kept.
func withTrigger(text, trigger string, names ...string) string {
	trimmed := strings.TrimLeftFunc(text, unicode.IsSpace)
	if hasPrefixFold(trimmed, trigger) {
		return text
	}
	for _, n := range names {
		for _, lead := range []string{"@" + n, n} {
			if hasPrefixFold(trimmed, lead) {
				rest := strings.TrimLeft(trimmed[len(lead):], ":,")
				return trigger + " " + strings.TrimLeftFunc(rest, unicode.IsSpace)
			}
		}
	}
	return trigger + " " + text
}

func hasPrefixFold(s, prefix string) bool {
	if prefix == "" || len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[len(prefix):])
	return len(s) == len(prefix) || !wordRune(r)
}

// Encrypted messages whose room key has not come are kept at most this
// many (and Matrix.keyWait long), retried after every sync.
const maxPending = 256

// pendingEvent is an encrypted message waiting for its room key.
type pendingEvent struct {
	room  id.RoomID
	evt   *event.Event
	since time.Time
}

// handleEncrypted decrypts an m.room.encrypted event and handles what
// it holds exactly as the same event in the clear. What cannot be
// decrypted is logged and never delivered: a missing key is waited for,
// anything else (a tampered or damaged ciphertext) is dropped.
func (m *Matrix) handleEncrypted(ctx context.Context, eng cryptoEngine, r id.RoomID, evt *event.Event) {
	dec, err := m.decrypt(ctx, eng, evt)
	switch {
	case err == nil:
		m.handleDecrypted(ctx, r, dec)
	case errors.Is(err, errNoSession):
		m.log.Info("matrix: cannot decrypt a message yet: no room key from the sender's device; waiting for it",
			"chat", ChatID(r), "id", evt.ID, "sender", evt.Sender)
		if len(m.pending) >= maxPending {
			old := m.pending[0]
			m.log.Warn("matrix: gave up on an encrypted message: too many wait for their room key",
				"chat", ChatID(old.room), "id", old.evt.ID, "sender", old.evt.Sender)
			m.pending = m.pending[1:]
		}
		m.pending = append(m.pending, pendingEvent{room: r, evt: evt, since: time.Now()})
	default:
		m.log.Warn("matrix: cannot decrypt a message; it is dropped",
			"chat", ChatID(r), "id", evt.ID, "sender", evt.Sender, "err", err)
	}
}

// retryPending tries the messages waiting for their room key again
// after a sync brought keys.
func (m *Matrix) retryPending(ctx context.Context, eng cryptoEngine) {
	if len(m.pending) == 0 {
		return
	}
	waiting := m.pending
	m.pending = nil
	for _, p := range waiting {
		dec, err := m.decrypt(ctx, eng, p.evt)
		switch {
		case err == nil:
			m.handleDecrypted(ctx, p.room, dec)
		case errors.Is(err, errNoSession) && time.Since(p.since) < m.keyWait:
			m.pending = append(m.pending, p)
		case errors.Is(err, errNoSession):
			m.log.Warn("matrix: gave up on an encrypted message: its room key never came",
				"chat", ChatID(p.room), "id", p.evt.ID, "sender", p.evt.Sender, "waited", m.keyWait)
		default:
			m.log.Warn("matrix: cannot decrypt a message; it is dropped",
				"chat", ChatID(p.room), "id", p.evt.ID, "sender", p.evt.Sender, "err", err)
		}
	}
}

// decrypt opens one event; a panic of the crypto library on hostile
// bytes is an error, not a crash.
func (m *Matrix) decrypt(ctx context.Context, eng cryptoEngine, evt *event.Event) (dec *event.Event, err error) {
	if perr := safely(func() { dec, err = eng.decrypt(ctx, evt) }); perr != nil {
		return nil, perr
	}
	if err == nil && dec == nil {
		err = errors.New("the crypto library returned nothing")
	}
	return dec, err
}

// handleDecrypted handles a decrypted message or sticker like one sent
// in the clear; other event types inside the encryption are ignored, as
// they are outside it.
func (m *Matrix) handleDecrypted(ctx context.Context, r id.RoomID, dec *event.Event) {
	dec.RoomID = r
	if dec.ID == "" || dec.Sender == "" || dec.StateKey != nil {
		return
	}
	switch dec.Type {
	case event.EventMessage, event.EventSticker:
		m.handleMessage(ctx, r, dec)
	}
}

// safely runs f and turns a panic into an error.
func safely(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the crypto library failed: %v", p)
		}
	}()
	f()
	return nil
}
