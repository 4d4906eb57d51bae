// Package chantest is an in-memory channel for tests: it serves media
// bytes from memory, records what was sent, and counts downloads so a test
// can prove that nothing was fetched before it was asked for.
package chantest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// Channel is a fake network named after a real one so refs route to it.
type Channel struct {
	name string

	mu      sync.Mutex
	media   map[string]Media // by Private key
	sent    []channels.OutMessage
	files   []SentFile
	typing  map[string]bool
	typings map[string]int // times typing was switched on, by chat
	// reactions are the emoji each React left on a message, in order ("" for
	// taken off), by chat and message id.
	reactions map[[2]string][]string
	sendErr   error

	downloads atomic.Int64

	// BeforeUpload, when set, runs in SendMedia before the file is read:
	// a test can swap the file on disk at the worst moment.
	BeforeUpload func(channels.OutMedia)
	// AfterSend, when set, runs once Send delivered a message: a test can
	// stop botd right after the network accepted it.
	AfterSend func(channels.OutMessage)
	// Fence, when set, is asked before anything goes out, as a real
	// channel's Env.Fence is where its calls leave the process: a refused
	// call records nothing and fails with the fence's error.
	Fence channels.Fence
}

// Media is what a fake download serves.
type Media struct {
	Data []byte
	// Reader, when set, is used instead of Data (for huge or slow streams).
	Reader func() io.ReadCloser
	Err    error
	// Gate, when set, blocks the download until it is closed.
	Gate chan struct{}
}

// SentFile records a SendMedia call with the bytes that were sent.
// Path is the name the sent file had when it was opened (the caller
// closes File after the send).
type SentFile struct {
	channels.OutMedia
	Path string
	Data []byte
}

var (
	_ channels.Channel     = (*Channel)(nil)
	_ channels.Downloader  = (*Channel)(nil)
	_ channels.MediaSender = (*Channel)(nil)
	_ channels.Typer       = (*Channel)(nil)
	_ channels.Reactor     = (*Channel)(nil)
)

// New returns a fake channel called name ("telegram", "slack", ...).
func New(name string) *Channel {
	return &Channel{name: name, media: map[string]Media{}, typing: map[string]bool{}, typings: map[string]int{}}
}

// fenced is the fence's refusal of an outgoing call, or nil.
func (c *Channel) fenced(ctx context.Context) error {
	if c.Fence == nil {
		return nil
	}
	if err := c.Fence.CheckFence(ctx); err != nil {
		return fmt.Errorf("fake %s: not sent: %w", c.name, err)
	}
	return nil
}

func (c *Channel) Name() string                    { return c.name }
func (c *Channel) Start(ctx context.Context) error { return nil }

// Serve makes the ref whose Private is key download as m.
func (c *Channel) Serve(key string, m Media) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.media[key] = m
}

// Downloads counts Download calls that reached the network.
func (c *Channel) Downloads() int64 { return c.downloads.Load() }

func (c *Channel) Download(ctx context.Context, ref *mediaregistry.MediaReference) (io.ReadCloser, int64, error) {
	c.mu.Lock()
	m, ok := c.media[string(ref.Private)]
	c.mu.Unlock()
	if !ok {
		return nil, 0, fmt.Errorf("fake %s: %w", c.name, channels.ErrUnavailable)
	}
	if err := c.fenced(ctx); err != nil {
		return nil, 0, err
	}
	c.downloads.Add(1)
	if m.Gate != nil {
		select {
		case <-m.Gate:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	if m.Err != nil {
		return nil, 0, m.Err
	}
	if m.Reader != nil {
		return m.Reader(), -1, nil
	}
	return io.NopCloser(bytes.NewReader(m.Data)), int64(len(m.Data)), nil
}

// FailSends makes every send fail with err (nil to recover).
func (c *Channel) FailSends(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sendErr = err
}

func (c *Channel) Send(ctx context.Context, m channels.OutMessage) (channels.Delivery, error) {
	if err := c.fenced(ctx); err != nil {
		return channels.Delivery{}, err
	}
	c.mu.Lock()
	if c.sendErr != nil {
		c.mu.Unlock()
		return channels.Delivery{}, c.sendErr
	}
	c.sent = append(c.sent, m)
	d := channels.Delivery{MessageIDs: []string{fmt.Sprint(len(c.sent))}}
	after := c.AfterSend
	c.mu.Unlock()
	if after != nil {
		after(m)
	}
	return d, nil
}

func (c *Channel) SendMedia(ctx context.Context, m channels.OutMedia) (channels.Delivery, error) {
	if err := c.fenced(ctx); err != nil {
		return channels.Delivery{}, err
	}
	if c.BeforeUpload != nil {
		c.BeforeUpload(m)
	}
	st, err := m.File.Stat()
	if err != nil {
		return channels.Delivery{}, fmt.Errorf("fake send media: %w", err)
	}
	data, err := io.ReadAll(io.NewSectionReader(m.File, 0, st.Size()))
	if err != nil {
		return channels.Delivery{}, fmt.Errorf("fake send media: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sendErr != nil {
		return channels.Delivery{}, c.sendErr
	}
	c.files = append(c.files, SentFile{OutMedia: m, Path: m.File.Name(), Data: data})
	return channels.Delivery{MessageIDs: []string{fmt.Sprintf("f%d", len(c.files))}}, nil
}

func (c *Channel) SetTyping(ctx context.Context, chat string, on bool) error {
	if err := c.fenced(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.typing[chat] = on
	if on {
		c.typings[chat]++
	}
	return nil
}

// TypingShown counts the times typing was switched on in chat: a renewal
// of an indicator that lapses counts again.
func (c *Channel) TypingShown(chat string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.typings[chat]
}

// Sent returns the text messages sent so far.
func (c *Channel) Sent() []channels.OutMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]channels.OutMessage(nil), c.sent...)
}

// Files returns the files sent so far.
func (c *Channel) Files() []SentFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]SentFile(nil), c.files...)
}

// Typing reports the last typing state of chat.
func (c *Channel) Typing(chat string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.typing[chat]
}

// ErrBoom is a ready-made failure.
var ErrBoom = errors.New("fake network failure")

// OpenFile opens path for a SendMedia call and closes it when the test
// ends.
func OpenFile(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// React records the reaction: what a message shows after it. It goes
// through the fence like every call out.
func (c *Channel) React(ctx context.Context, r channels.Reaction) error {
	if err := c.fenced(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reactions == nil {
		c.reactions = map[[2]string][]string{}
	}
	k := [2]string{r.Chat, r.MessageID}
	c.reactions[k] = append(c.reactions[k], r.Emoji)
	return nil
}

// Reactions are the emoji React left on the message, in order, "" for
// taken off.
func (c *Channel) Reactions(chat, messageID string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.reactions[[2]string{chat, messageID}]...)
}
