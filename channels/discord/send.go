package discord

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/textclip"
	"github.com/botd-dev/botd/mediaregistry"
)

// nativeChat parses "discord:<channel id>".
func nativeChat(chat string) (string, error) {
	rest, ok := strings.CutPrefix(chat, Name+":")
	if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
		return "", fmt.Errorf("discord: chat %q is not a discord chat id (discord:<channel id>)", chat)
	}
	return rest, nil
}

// noPings lets an answer ping nobody: whatever the model wrote, no
// @everyone, @here, role or user is notified. A reply may notify the
// person it answers, who asked.
func noPings(reply bool) *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, RepliedUser: reply}
}

// mentionEscaper breaks what Discord renders as a mention with a zero-width
// space, so an answer does not even look like it pings (allowed_mentions is
// what guarantees it does not).
var mentionEscaper = strings.NewReplacer(
	"@everyone", "@\u200beveryone",
	"@here", "@\u200bhere",
	"<@", "<@\u200b",
)

// render is an answer as Discord shows it: Discord renders markdown itself
// (its own dialect: bold, italic, strike, code, fences, quotes, lists,
// headings, masked links), so the model's markdown goes as it is, with
// mentions broken, cut into pieces of at most limit characters.
func render(md string, limit int) []string {
	return splitFenced(mentionEscaper.Replace(md), limit)
}

// fenceReserve is what closing and reopening a code fence at a cut can
// add to a piece: "\n```" and "```" + a language of up to maxLang + "\n".
const (
	maxLang      = 16
	fenceReserve = 4 + 3 + maxLang + 1
)

// splitFenced is channels.Split that never leaves a code block open
// across a cut: a piece that ends inside a ``` fence closes it, and the
// next one reopens it with the same language, so code stays code.
func splitFenced(text string, limit int) []string {
	if limit <= fenceReserve*2 {
		return channels.Split(text, limit)
	}
	pieces := channels.Split(text, limit-fenceReserve)
	var out []string
	reopen := ""
	for _, p := range pieces {
		p = reopen + p
		open, lang := fenceState(p)
		reopen = ""
		if open {
			p += "\n```"
			reopen = "```" + lang + "\n"
		}
		out = append(out, p)
	}
	return out
}

// fenceState reports whether text ends inside a ``` code block, and the
// language that block was opened with (kept only when short and plain).
func fenceState(text string) (open bool, lang string) {
	for line := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") {
			continue
		}
		if open {
			open, lang = false, ""
			continue
		}
		open = true
		lang = strings.TrimSpace(strings.TrimPrefix(t, "```"))
		if len(lang) > maxLang || strings.ContainsAny(lang, "` \t") {
			lang = ""
		}
	}
	return open, lang
}

// Send implements channels.Channel: the markdown as Discord renders it,
// split at 2000 characters, the first piece a reply to msg.ReplyTo. A
// thread is a chat of its own on Discord, so ThreadID is not needed.
func (d *Discord) Send(ctx context.Context, msg channels.OutMessage) (channels.Delivery, error) {
	var out channels.Delivery
	ch, err := nativeChat(msg.Chat)
	if err != nil {
		return out, err
	}
	pieces := render(msg.Text, MaxMessageRunes)
	if len(pieces) == 0 {
		return out, fmt.Errorf("discord send to %s: empty message", msg.Chat)
	}
	for i, p := range pieces {
		reply := ""
		if i == 0 {
			reply = msg.ReplyTo
		}
		id, err := d.post(ctx, ch, &discordgo.MessageSend{Content: p}, reply)
		if err != nil {
			return out, fmt.Errorf("discord send to %s (part %d of %d): %w", msg.Chat, i+1, len(pieces), err)
		}
		out.MessageIDs = append(out.MessageIDs, id)
	}
	return out, nil
}

// post creates one message; discordgo waits out the route's rate-limit
// bucket before it and a 429's retry_after after it.
func (d *Discord) post(ctx context.Context, ch string, ms *discordgo.MessageSend, replyTo string) (string, error) {
	ms.AllowedMentions = noPings(replyTo != "")
	if replyTo != "" {
		no := false
		// A reply to a message deleted meanwhile goes out as a plain message.
		ms.Reference = &discordgo.MessageReference{MessageID: replyTo, ChannelID: ch, FailIfNotExists: &no}
	}
	m, err := d.s.ChannelMessageSendComplex(ch, ms, discordgo.WithContext(ctx))
	if err != nil {
		return "", restError("create message", err)
	}
	return m.ID, nil
}

// SendMedia implements channels.MediaSender: the file as an attachment,
// the caption as its message when it fits one, else as text after it.
func (d *Discord) SendMedia(ctx context.Context, m channels.OutMedia) (channels.Delivery, error) {
	var out channels.Delivery
	ch, err := nativeChat(m.Chat)
	if err != nil {
		return out, err
	}
	name, size, err := m.Upload()
	if err != nil {
		return out, fmt.Errorf("discord send media to %s: %w", m.Chat, err)
	}
	mt := m.MIME
	if mt == "" {
		mt, _ = mediaregistry.FileMIME(m.File)
	}
	caption, rest := "", ""
	if pieces := render(m.Caption, MaxMessageRunes); len(pieces) == 1 {
		caption = pieces[0]
	} else if len(pieces) > 1 {
		rest = m.Caption
	}
	// A reader of its own: only the bytes checked are sent.
	file := &discordgo.File{Name: name, ContentType: mt, Reader: io.NewSectionReader(m.File, 0, size)}
	id, err := d.post(ctx, ch, &discordgo.MessageSend{Content: caption, Files: []*discordgo.File{file}}, "")
	if err != nil {
		return out, fmt.Errorf("discord send media to %s: %w", m.Chat, err)
	}
	out.MessageIDs = append(out.MessageIDs, id)
	if rest != "" {
		more, err := d.Send(ctx, channels.OutMessage{Chat: m.Chat, Text: rest})
		out.MessageIDs = append(out.MessageIDs, more.MessageIDs...)
		if err != nil {
			return out, fmt.Errorf("discord send media caption: %w", err)
		}
	}
	return out, nil
}

// typingLoop keeps "typing…" on in one channel.
type typingLoop struct {
	stop context.CancelFunc
	// renewed is when "on" was last asked (unix nanoseconds): the loop
	// ends typingMax after it, so a forgotten "off" cannot leave the bot
	// typing forever.
	renewed atomic.Int64
}

// SetTyping implements channels.Typer. Discord shows "typing…" for about
// ten seconds per call (or until the bot posts), so on=true repeats it
// every typingEvery until on=false, the channel stops, or typingMax
// passes without a renewal. A renewal only moves that deadline.
func (d *Discord) SetTyping(ctx context.Context, chat string, on bool) error {
	ch, err := nativeChat(chat)
	if err != nil {
		return err
	}
	d.mu.Lock()
	if cur, ok := d.typing[chat]; ok {
		if on {
			cur.renewed.Store(time.Now().UnixNano())
			d.mu.Unlock()
			return nil
		}
		cur.stop()
		delete(d.typing, chat)
	}
	d.mu.Unlock()
	if !on {
		return nil
	}
	if err := d.s.ChannelTyping(ch, discordgo.WithContext(ctx)); err != nil {
		return fmt.Errorf("discord typing in %s: %w", chat, restError("typing", err))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || d.runCtx == nil {
		// Not receiving: one indicator, no loop that Wait would miss.
		return nil
	}
	loopCtx, stop := context.WithCancel(d.runCtx)
	loop := &typingLoop{stop: stop}
	loop.renewed.Store(time.Now().UnixNano())
	if old, ok := d.typing[chat]; ok {
		old.stop()
	}
	d.typing[chat] = loop
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer func() {
			stop()
			d.mu.Lock()
			if d.typing[chat] == loop {
				delete(d.typing, chat)
			}
			d.mu.Unlock()
		}()
		clock.Every(loopCtx, d.typingEvery, func() {
			if time.Since(time.Unix(0, loop.renewed.Load())) > d.typingMax {
				stop()
				return
			}
			if err := d.s.ChannelTyping(ch, discordgo.WithContext(loopCtx)); err != nil && loopCtx.Err() == nil {
				d.log.Debug("discord: typing refresh failed", "chat", chat, "err", textclip.OneLine(err.Error(), 200))
			}
		})
	}()
	return nil
}
