package discord

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/textclip"
	"github.com/botd-dev/botd/mediaregistry"
)

// ChatID is the botd chat id of a Discord channel, thread or DM.
func ChatID(channelID string) string { return Name + ":" + channelID }

func (d *Discord) onMessageCreate(_ *discordgo.Session, m *discordgo.MessageCreate) {
	if m == nil || m.Message == nil {
		return
	}
	d.handle(d.runContext(), m.Message, false)
}

// onMessageUpdate handles edits. Discord also sends MESSAGE_UPDATE when it
// adds a link's embed after the fact, as a partial message without an
// author; that changes nothing the sender typed and is skipped.
func (d *Discord) onMessageUpdate(_ *discordgo.Session, m *discordgo.MessageUpdate) {
	if m == nil || m.Message == nil || m.Author == nil || m.EditedTimestamp == nil {
		return
	}
	d.handle(d.runContext(), m.Message, true)
}

// handle is the single entry point for a message the gateway delivered.
func (d *Discord) handle(ctx context.Context, m *discordgo.Message, edit bool) {
	d.handleMu.Lock()
	defer d.handleMu.Unlock()
	if d.isStopped() {
		return
	}
	in, ok := d.inbound(ctx, m, edit)
	if !ok {
		return
	}
	// Discord's gateway has no acknowledgement to withhold (the session's
	// sequence number moves on before a handler runs, and a new session
	// replays nothing). What it allows: Env.Deliver retries while the
	// store refuses, and as handlers run in order on the gateway's reader
	// (SyncEvents), later messages wait behind this one, unread on the
	// connection, instead of being dropped. They are held in memory while
	// the process lives; one that was still held when botd stopped is
	// lost, as is anything sent while botd is not connected.
	_ = d.env.Deliver(ctx, in)
}

// contentTypes are the message types that carry what someone said; joins,
// pins, boosts, thread-created notices and the like are skipped.
var contentTypes = map[discordgo.MessageType]bool{
	discordgo.MessageTypeDefault: true,
	discordgo.MessageTypeReply:   true,
}

// maxAttachments caps the refs one message can create (Discord allows
// 10 files per message; a crafted event is not bound by that).
const maxAttachments = 10

// inbound normalises a message: refs for attachments (metadata only),
// placeholders for stickers, link previews for embeds, mentions as names.
func (d *Discord) inbound(ctx context.Context, m *discordgo.Message, edit bool) (channels.Inbound, bool) {
	if m.ChannelID == "" || m.ID == "" || !contentTypes[m.Type] {
		return channels.Inbound{}, false
	}
	me := d.Me()
	chat := ChatID(m.ChannelID)
	in := channels.Inbound{
		ChatID:  chat,
		IsGroup: m.GuildID != "",
		ID:      m.ID,
		Time:    m.Timestamp,
		Edit:    edit,
	}
	if edit && m.EditedTimestamp != nil {
		in.Time = *m.EditedTimestamp
	}
	if in.Time.IsZero() {
		in.Time = time.Now()
	}
	if a := m.Author; a != nil {
		in.SenderID = a.ID
		in.SenderName = senderName(m)
		in.FromMe = me.ID != "" && a.ID == me.ID
		in.IsBot = a.Bot || a.System
	}
	if m.WebhookID != "" {
		in.IsBot = true
	}
	if r := m.MessageReference; r != nil && r.Type == discordgo.MessageReferenceTypeDefault && r.MessageID != "" &&
		(r.ChannelID == "" || r.ChannelID == m.ChannelID) {
		in.ReplyTo = r.MessageID
	}
	in.ChatName = d.chatName(ctx, m)
	if in.ChatName == "" && !in.IsGroup {
		in.ChatName = in.SenderName
	}

	text := d.plainText(m, me)
	refs, notes := d.extract(in, m)
	in.Links = embedLinks(m.Embeds)
	if text == "" && len(refs) == 0 && len(notes) == 0 && len(in.Links) == 0 {
		return channels.Inbound{}, false
	}
	if text != "" {
		notes = append(notes, text)
	}
	// Bots never address the assistant: two bots in one channel must not
	// answer each other forever.
	addressed := !in.IsBot && (!in.IsGroup || mentionsBot(m, me.ID) || repliesToBot(m, me.ID))
	in.Mentioned = addressed
	if !d.env.Compose(ctx, &in, strings.Join(notes, "\n"), refs) {
		// Not a group of ours: only enough for an operator to register it
		// (and whether it addressed the bot, for pairing).
		return in, true
	}
	for _, r := range in.Refs {
		if h := decodeHandle(r.Private); h.Attachment != "" {
			d.known.put(knownKey(chat, m.ID, h.Attachment), r)
		}
	}
	in.Mentioned = addressed
	return in, true
}

func knownKey(chat, msg, att string) string { return chat + "|" + msg + "|" + att }

func senderName(m *discordgo.Message) string {
	if m.Member != nil && m.Member.Nick != "" {
		return m.Member.Nick
	}
	if m.Author == nil {
		return ""
	}
	if m.Author.GlobalName != "" {
		return m.Author.GlobalName
	}
	return m.Author.Username
}

// chatName is "#channel" for a guild channel, the thread's name for a
// thread, from the gateway's state or (once per channel) the REST API.
func (d *Discord) chatName(ctx context.Context, m *discordgo.Message) string {
	if m.GuildID == "" {
		return ""
	}
	if c, err := d.s.State.Channel(m.ChannelID); err == nil && c.Name != "" {
		return channelLabel(c)
	}
	if name, ok := d.names.get(m.ChannelID); ok {
		return name
	}
	name := ""
	if c, err := d.s.Channel(m.ChannelID, discordgo.WithContext(ctx)); err == nil {
		name = channelLabel(c)
	} else {
		d.log.Debug("discord: channel lookup failed", "channel", m.ChannelID, "err", err)
	}
	d.names.put(m.ChannelID, name)
	return name
}

func channelLabel(c *discordgo.Channel) string {
	if c.IsThread() {
		return c.Name
	}
	return "#" + c.Name
}

func mentionsBot(m *discordgo.Message, botID string) bool {
	if botID == "" {
		return false
	}
	for _, u := range m.Mentions {
		if u != nil && u.ID == botID {
			return true
		}
	}
	return strings.Contains(m.Content, "<@"+botID+">") || strings.Contains(m.Content, "<@!"+botID+">")
}

func repliesToBot(m *discordgo.Message, botID string) bool {
	r := m.ReferencedMessage
	return botID != "" && m.MessageReference != nil && r != nil && r.Author != nil && r.Author.ID == botID
}

// markup is Discord's inline markup for mentions and custom emoji,
// compiled at the first message: a botd with Discord off never builds it.
var markup = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`<(@!?|@&|#|a?:[A-Za-z0-9_~]{1,32}:)([0-9]{1,20})>`)
})

// plainText is what a person sees: user mentions as @names (the bot as
// @AssistantName, so the trigger matches), roles and channels by name
// where known, custom emoji as :name:, then fake placeholders defused.
func (d *Discord) plainText(m *discordgo.Message, me discordgo.User) string {
	users := map[string]string{}
	for _, u := range m.Mentions {
		if u != nil {
			users[u.ID] = u.DisplayName()
		}
	}
	re := markup()
	text := re.ReplaceAllStringFunc(m.Content, func(s string) string {
		sub := re.FindStringSubmatch(s)
		kind, id := sub[1], sub[2]
		switch {
		case kind == "@" || kind == "@!":
			if id == me.ID && me.ID != "" {
				if d.env.AssistantName != "" {
					return "@" + d.env.AssistantName
				}
				return "@" + me.Username
			}
			if n := users[id]; n != "" {
				return "@" + n
			}
			return "@user"
		case kind == "@&":
			if r, err := d.s.State.Role(m.GuildID, id); err == nil && r.Name != "" {
				return "@" + r.Name
			}
			return "@role"
		case kind == "#":
			if c, err := d.s.State.Channel(id); err == nil && c.Name != "" {
				return "#" + c.Name
			}
			return "#channel"
		default: // custom emoji, "<:name:" or "<a:name:"
			name := strings.TrimPrefix(kind, "a")
			return name
		}
	})
	return strings.TrimSpace(mediaregistry.Neutralize(text))
}

// embedLinks are the message's embeds as link previews: Discord's
// unfurls of links (with the URL they preview) and a bot's rich embeds
// (often without one). channels.Env.Compose cleans and bounds them.
func embedLinks(embeds []*discordgo.MessageEmbed) []channels.LinkPreview {
	var out []channels.LinkPreview
	for _, e := range embeds {
		if e == nil {
			continue
		}
		l := channels.LinkPreview{URL: e.URL, Title: e.Title, Description: e.Description}
		if e.Provider != nil {
			l.Site = e.Provider.Name
		} else if e.Author != nil {
			l.Site = e.Author.Name
		}
		if l.Title == "" && l.Description == "" && len(e.Fields) > 0 && e.Fields[0] != nil {
			l.Title, l.Description = e.Fields[0].Name, e.Fields[0].Value
		}
		out = append(out, l)
	}
	return out
}

// extract turns a message's attachments into refs (metadata only: no
// request is made) and its stickers into metadata-only placeholders:
// sticker images are Discord's, not the sender's, and their emoji-like
// name says what was meant. Attachments beyond the cap are counted.
func (d *Discord) extract(in channels.Inbound, m *discordgo.Message) (refs []mediaregistry.MediaReference, notes []string) {
	atts := m.Attachments
	extra := 0
	if len(atts) > maxAttachments {
		extra = len(atts) - maxAttachments
		atts = atts[:maxAttachments]
	}
	voice := m.Flags&discordgo.MessageFlagsIsVoiceMessage != 0
	for _, a := range atts {
		ref, ok := attachmentRef(in, a, voice)
		if !ok {
			continue
		}
		if known, ok := d.known.get(knownKey(in.ChatID, in.ID, a.ID)); ok {
			ref = known
		}
		refs = append(refs, ref)
	}
	if extra > 0 {
		notes = append(notes, "["+strconv.Itoa(extra)+" more "+plural(extra, "file", "files")+" omitted]")
	}
	for _, s := range m.StickerItems {
		if s == nil {
			continue
		}
		ref := mediaregistry.MediaReference{Channel: Name, Chat: in.ChatID, MessageID: in.ID, Sender: in.SenderName,
			Kind: mediaregistry.Sticker, MIME: stickerMIME(s.FormatType), FileName: textclip.OneLine(s.Name, 80)}
		notes = append(notes, channels.RenderMeta(&ref))
	}
	return refs, notes
}

// attachmentRef is one attachment's ref. A voice message is a message
// flagged 1<<13 whose one attachment carries a duration and a waveform.
func attachmentRef(in channels.Inbound, a *discordgo.MessageAttachment, voiceMsg bool) (mediaregistry.MediaReference, bool) {
	if a == nil || a.ID == "" || a.Ephemeral {
		return mediaregistry.MediaReference{}, false
	}
	sender := in.SenderName
	if sender == "" {
		sender = in.SenderID
	}
	mime := mediaregistry.Declared(a.ContentType, a.Filename)
	ref := mediaregistry.MediaReference{
		Channel:   Name,
		Chat:      in.ChatID,
		MessageID: in.ID,
		Sender:    sender,
		MIME:      mime,
		FileName:  a.Filename,
		Width:     max(a.Width, 0),
		Height:    max(a.Height, 0),
	}
	if a.Size > 0 {
		ref.Size = int64(a.Size)
	}
	if a.DurationSecs > 0 && a.DurationSecs < 1e7 {
		ref.Duration = time.Duration(a.DurationSecs * float64(time.Second))
	}
	switch {
	case voiceMsg && (a.Waveform != "" || a.DurationSecs > 0 || strings.HasPrefix(mime, "audio/")):
		ref.Kind = mediaregistry.Voice
		if ref.MIME == "" {
			ref.MIME = "audio/ogg"
		}
	case mime == "image/gif":
		ref.Kind = mediaregistry.Animation
	case strings.HasPrefix(mime, "image/"):
		ref.Kind = mediaregistry.Image
	case strings.HasPrefix(mime, "video/"):
		ref.Kind = mediaregistry.Video
	case strings.HasPrefix(mime, "audio/"):
		ref.Kind = mediaregistry.Audio
	default:
		ref.Kind = mediaregistry.Document
	}
	ref.Private = encodeHandle(handle{Channel: channelOf(in.ChatID), Message: in.ID, Attachment: a.ID, URL: stripQuery(a.URL)})
	return ref, true
}

func channelOf(chat string) string { return strings.TrimPrefix(chat, Name+":") }

func stickerMIME(f discordgo.StickerFormat) string {
	switch f {
	case discordgo.StickerFormatTypePNG:
		return "image/png"
	case discordgo.StickerFormatTypeAPNG:
		return "image/apng"
	case discordgo.StickerFormatTypeLottie:
		return "application/json"
	case discordgo.StickerFormatTypeGIF:
		return "image/gif"
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
