package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// handle turns one event into an Inbound for the sink. Only message events
// matter: app_mention repeats a message the bot also gets as "message", and
// mentions are read from the text.
//
// It reports whether the event may be acknowledged: the store holds the
// message (Env.Deliver retries until it does), or there was nothing to
// store; false only when receiving stopped first.
func (s *Slack) handle(ctx context.Context, ev slackevents.EventsAPIEvent) bool {
	if ev.Type != slackevents.CallbackEvent || s.env.Sink == nil {
		return true
	}
	msg, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok {
		return true
	}
	in, ok := s.inbound(ctx, msg)
	if !ok {
		return ctx.Err() == nil
	}
	return s.env.Deliver(ctx, in) == nil
}

// contentSubtypes are the message subtypes that carry something a person
// (or bot) said; joins, topic changes, deletions and the like are skipped.
var contentSubtypes = map[string]bool{
	"": true, "file_share": true, "thread_broadcast": true, "bot_message": true, "me_message": true,
}

func (s *Slack) inbound(ctx context.Context, ev *slackevents.MessageEvent) (channels.Inbound, bool) {
	m := ev.Message // slackevents puts the top-level message here too
	if m == nil {
		return channels.Inbound{}, false
	}
	edit := false
	switch {
	case ev.SubType == "message_changed":
		if !contentSubtypes[m.SubType] {
			return channels.Inbound{}, false
		}
		// Reply counters also arrive as message_changed; only a changed
		// text, file list or link preview (an unfurl Slack added after the
		// message was posted) is an edit worth storing.
		if p := ev.PreviousMessage; p != nil && p.Text == m.Text && len(p.Files) == len(m.Files) &&
			slices.Equal(linkPreviews(p.Attachments), linkPreviews(m.Attachments)) {
			return channels.Inbound{}, false
		}
		edit = true
	case !contentSubtypes[ev.SubType]:
		return channels.Inbound{}, false
	}

	chat := "slack:" + ev.Channel
	botID := m.BotID
	if botID == "" {
		botID = ev.BotID
	}
	fromMe := (m.User != "" && m.User == s.botUserID) || (botID != "" && botID == s.botID)
	isBot := fromMe || botID != "" || m.SubType == "bot_message"
	im := ev.ChannelType == slackevents.ChannelTypeIM

	in := channels.Inbound{
		ChatID:   chat,
		IsGroup:  !im,
		ID:       m.Timestamp,
		SenderID: m.User,
		Time:     parseTS(m.Timestamp),
		FromMe:   fromMe,
		IsBot:    isBot,
		Edit:     edit,
		// Bots never trigger the assistant: two bots in one channel must not
		// answer each other forever.
		Mentioned: !isBot && (im || s.mentionsBot(m.Text)),
	}
	if m.ThreadTimestamp != "" && m.ThreadTimestamp != m.Timestamp {
		// A thread reply is about its root (often a shared file): the
		// agent quotes the root however old it is, as for a Telegram reply.
		in.ThreadID, in.ReplyTo = m.ThreadTimestamp, m.ThreadTimestamp
	}
	if in.SenderID == "" {
		in.SenderID = botID
	}
	if in.Mentioned && m.User != "" {
		root := cmp.Or(m.ThreadTimestamp, m.Timestamp)
		s.askers.put(ev.Channel+"/"+root, asker{user: m.User, team: cmp.Or(m.Team, s.teamID)})
		s.typingIn.put(chat, in.ThreadID)
	}
	switch {
	case m.User != "":
		in.SenderName = s.userName(ctx, m.User)
	case m.Username != "":
		in.SenderName = m.Username
	case m.BotProfile != nil:
		in.SenderName = m.BotProfile.Name
	}
	in.ChatName = s.channelName(ctx, ev.Channel)
	if in.ChatName == "" && im {
		in.ChatName = in.SenderName
	}

	text := s.plainText(ctx, m.Text)
	refs, notes := s.fileRefs(in, m.Files)
	in.Links = linkPreviews(m.Attachments)
	if text == "" && len(refs) == 0 && len(notes) == 0 && len(in.Links) == 0 {
		return channels.Inbound{}, false
	}
	if text != "" {
		notes = append(notes, text)
	}
	s.env.Compose(ctx, &in, strings.Join(notes, "\n"), refs)
	// An edit (or an unfurl, which Slack also reports as message_changed)
	// of this message reuses these refs instead of registering duplicates.
	for _, r := range in.Refs {
		var p private
		if json.Unmarshal(r.Private, &p) == nil && p.FileID != "" {
			s.known.put(knownKey(in, p.FileID), r)
		}
	}
	return in, true
}

// linkPreviews are the unfurls among a message's attachments: Slack marks
// them with the link they preview (original_url as typed, from_url);
// other attachments (a bot's formatted message) preview nothing.
// channels.Env.Compose cleans and bounds them.
func linkPreviews(atts []slackapi.Attachment) []channels.LinkPreview {
	var out []channels.LinkPreview
	for _, a := range atts {
		u := a.OriginalURL
		if u == "" {
			u = a.FromURL
		}
		if u == "" {
			continue
		}
		out = append(out, channels.LinkPreview{URL: u, Title: unfurlText(a.Title),
			Description: unfurlText(a.Text), Site: unfurlText(a.ServiceName)})
	}
	return out
}

// unfurlText is an unfurl field in Slack's wire format as plain text:
// links and mentions as their label (or target), entities decoded. Unlike
// plainText it looks nothing up: the text is the linked site's, and a page
// must not make botd call users.info for every id it names.
func unfurlText(s string) string {
	s = slackMarkup.ReplaceAllStringFunc(s, func(m string) string {
		target, label, _ := strings.Cut(m[1:len(m)-1], "|")
		if label != "" {
			return label
		}
		return target
	})
	return slackEntites.Replace(s)
}

// fileRefs splits a message's files into the refs channels.Env.Compose
// registers (or, known from an earlier event of the same message, only
// renders) and lines for the files that get no ref: files stored outside
// Slack (the bot token must not go there, so they are metadata only),
// deleted ones, and those beyond the per-message cap, so nothing
// disappears silently.
func (s *Slack) fileRefs(in channels.Inbound, files []slackapi.File) (refs []mediaregistry.MediaReference, notes []string) {
	if len(files) == 0 {
		return nil, nil
	}
	shown := files
	if len(shown) > MaxFilesPerMessage {
		shown = shown[:MaxFilesPerMessage]
	}
	unavailable := 0
	for _, f := range shown {
		if f.Mode == "tombstone" || f.Mode == "hidden_by_limit" {
			unavailable++
			continue
		}
		ref := fileRef(in, f)
		if f.IsExternal {
			notes = append(notes, channels.RenderMeta(&ref))
			continue
		}
		if known, ok := s.known.get(knownKey(in, f.ID)); ok {
			ref = known
		}
		refs = append(refs, ref)
	}
	if unavailable > 0 {
		notes = append(notes, fmt.Sprintf("[%d %s no longer available]", unavailable, plural(unavailable, "file", "files")))
	}
	if n := len(files) - len(shown); n > 0 {
		notes = append(notes, fmt.Sprintf("[%d more %s omitted]", n, plural(n, "file", "files")))
	}
	return refs, notes
}

func knownKey(in channels.Inbound, fileID string) string {
	return in.ChatID + "|" + in.ID + "|" + fileID
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// private is what a Slack ref keeps in MediaReference.Private: where to
// fetch the bytes. Never the token; Download adds it.
type private struct {
	FileID string `json:"file_id"`
	// URL is empty when Slack withheld the file object
	// (file_access: check_file_info); Download asks files.info then.
	URL string `json:"url,omitempty"`
}

func fileRef(in channels.Inbound, f slackapi.File) mediaregistry.MediaReference {
	name := f.Name
	if name == "" {
		name = f.Title
	}
	sender := in.SenderName
	if sender == "" {
		sender = in.SenderID
	}
	ref := mediaregistry.MediaReference{
		Channel:   "slack",
		Chat:      in.ChatID,
		MessageID: in.ID,
		Sender:    sender,
		Kind:      kindOf(f),
		MIME:      mediaregistry.CleanMIME(f.Mimetype),
		FileName:  name,
		Size:      int64(f.Size),
		Duration:  time.Duration(f.DurationMs) * time.Millisecond,
		Width:     f.OriginalW,
		Height:    f.OriginalH,
	}
	p := private{FileID: f.ID, URL: f.URLPrivateDownload}
	if p.URL == "" {
		p.URL = f.URLPrivate
	}
	if f.FileAccess == "check_file_info" {
		p.URL = ""
	}
	ref.Private, _ = json.Marshal(p) // two strings cannot fail to marshal
	return ref
}

func kindOf(f slackapi.File) mediaregistry.Kind {
	mime := mediaregistry.CleanMIME(f.Mimetype)
	switch {
	case strings.HasPrefix(mime, "image/"):
		return mediaregistry.Image
	case strings.HasPrefix(mime, "video/"):
		return mediaregistry.Video
	case strings.HasPrefix(mime, "audio/"):
		// Slack's recorded clips carry a waveform; uploaded songs do not.
		if len(f.AudioWaveSamples) > 0 {
			return mediaregistry.Voice
		}
		return mediaregistry.Audio
	}
	return mediaregistry.Document
}

func parseTS(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Now()
	}
	var us int64
	if frac != "" {
		frac = (frac + "000000")[:6]
		us, _ = strconv.ParseInt(frac, 10, 64)
	}
	return time.Unix(s, us*1000)
}

func (s *Slack) mentionsBot(text string) bool {
	if s.botUserID == "" {
		return false
	}
	return strings.Contains(text, "<@"+s.botUserID+">") || strings.Contains(text, "<@"+s.botUserID+"|")
}

var (
	slackMarkup  = regexp.MustCompile(`<([^<>]*)>`)
	slackEntites = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
)

// plainText turns Slack's wire format into what a person sees: mentions as
// @names (the bot as @AssistantName, so the trigger matches), links and
// channel names as text, entities decoded, then fake placeholders defused.
func (s *Slack) plainText(ctx context.Context, text string) string {
	text = slackMarkup.ReplaceAllStringFunc(text, func(m string) string {
		inner := m[1 : len(m)-1]
		target, label, _ := strings.Cut(inner, "|")
		switch {
		case strings.HasPrefix(target, "@"):
			id := target[1:]
			if id == s.botUserID && s.env.AssistantName != "" {
				return "@" + s.env.AssistantName
			}
			if label != "" {
				return "@" + strings.TrimPrefix(label, "@")
			}
			if name := s.userName(ctx, id); name != "" {
				return "@" + name
			}
			return "@" + id
		case strings.HasPrefix(target, "#"):
			if label != "" {
				return "#" + label
			}
			if name := s.channelName(ctx, target[1:]); name != "" {
				return "#" + name
			}
			return target
		case strings.HasPrefix(target, "!"):
			if label != "" {
				return label
			}
			kw, _, _ := strings.Cut(target[1:], "^")
			return "@" + kw
		default:
			if label != "" && label != target && "mailto:"+label != target {
				return label + " (" + target + ")"
			}
			if label != "" {
				return label
			}
			return target
		}
	})
	return strings.TrimSpace(mediaregistry.Neutralize(slackEntites.Replace(text)))
}

// userName resolves a user id with users.info, once per id (failures too,
// so a missing users:read scope costs one call per user, not per message).
func (s *Slack) userName(ctx context.Context, id string) string {
	return s.cachedName(s.users, id, func() string {
		u, err := s.api.GetUserInfoContext(ctx, id)
		if err != nil {
			s.log.Debug("slack: users.info failed", "user", id, "err", err)
			return ""
		}
		name := u.Profile.DisplayName
		if name == "" {
			name = u.RealName
		}
		if name == "" {
			name = u.Name
		}
		return name
	})
}

// channelName resolves a conversation id with conversations.info, once per id.
func (s *Slack) channelName(ctx context.Context, id string) string {
	return s.cachedName(s.chanName, id, func() string {
		c, err := s.api.GetConversationInfoContext(ctx, &slackapi.GetConversationInfoInput{ChannelID: id})
		if err != nil {
			s.log.Debug("slack: conversations.info failed", "conversation", id, "err", err)
			return ""
		}
		return c.Name
	})
}

// cachedName answers id from cache (guarded by namesMu), or asks lookup
// and keeps its answer, an empty one too. The lock is not held across the
// API call.
func (s *Slack) cachedName(cache map[string]string, id string, lookup func() string) string {
	s.namesMu.Lock()
	name, ok := cache[id]
	s.namesMu.Unlock()
	if ok {
		return name
	}
	name = lookup()
	s.namesMu.Lock()
	cache[id] = name
	s.namesMu.Unlock()
	return name
}
