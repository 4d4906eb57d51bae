// Package channels defines what botd needs from a chat network: one small
// core interface plus optional capabilities checked at runtime, in the
// style of mautrix-go's bridgev2. Each network lives in a subpackage.
package channels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/botd-dev/botd/mediaregistry"
)

// StartOnce lets a channel's Start go ahead once: one receiving loop per
// channel value, a second Start is refused.
type StartOnce struct{ started atomic.Bool }

// Begin marks the channel started, or says that it already was.
func (o *StartOnce) Begin(name string) error {
	if !o.started.CompareAndSwap(false, true) {
		return fmt.Errorf("%s: already started", name)
	}
	return nil
}

// Channel is one connected chat network.
type Channel interface {
	// Name is the chat id prefix: "telegram", "slack", "whatsapp".
	Name() string
	// Start connects and returns once the channel is receiving, or with a
	// start-up error (bad token, logged out) that names the setting to fix.
	// Receiving continues in the background until ctx ends.
	Start(ctx context.Context) error
	// Send delivers text to a chat, split to the network's limit.
	Send(ctx context.Context, msg OutMessage) (Delivery, error)
}

// MediaSender sends a file to a chat.
type MediaSender interface {
	SendMedia(ctx context.Context, m OutMedia) (Delivery, error)
}

// Waiter is a channel whose Start leaves goroutines running (a poller, a
// socket, a webhook server). Wait blocks until every one of them returned
// after Start's ctx ended, so shutdown can close the store after the last
// message was handed to the sink.
type Waiter interface {
	Wait()
}

// Checker is a channel that can prove its settings without receiving
// anything: one read-only call to its network (who the credentials
// belong to), or a look at its local session. `botd doctor` asks it of
// every enabled channel. who names the account for a person, e.g.
// "bot @name (id 123)"; an error says what to fix and never holds a
// secret. New must still not connect: Check is the only call it makes.
type Checker interface {
	Check(ctx context.Context) (who string, err error)
}

// Unreachable is the error of a network that did not answer (a start's
// or a Check's first call): errors.Is(err, ErrUnavailable) holds, and its
// text is the formatted message alone, without ErrUnavailable's words
// about media.
func Unreachable(format string, args ...any) error {
	return unreachable(fmt.Sprintf(format, args...))
}

type unreachable string

func (u unreachable) Error() string        { return string(u) }
func (u unreachable) Is(target error) bool { return target == ErrUnavailable }

// ErrUnchecked wraps a Checker's error when nothing was wrong but the
// settings could not be proved without a write (a first login): a
// warning, not a failure.
var ErrUnchecked = errors.New("not checked")

// Typer shows "typing…" while the agent works.
type Typer interface {
	SetTyping(ctx context.Context, chat string, on bool) error
}

// Reactor is a channel that can put the assistant's own reaction on a
// message and take it off: botd marks the question a run answers as seen
// (ack_reaction), then clears it or marks a failure.
type Reactor interface {
	React(ctx context.Context, r Reaction) error
}

// CommandMenu is a channel whose clients offer the bot's commands as a
// menu (Telegram's setMyCommands): botd registers the chat's commands
// there at start.
type CommandMenu interface {
	SetCommands(ctx context.Context, cmds []BotCommand) error
}

// BotCommand is one command of the menu: its name without the slash and
// a line saying what it does.
type BotCommand struct {
	Name, Help string
}

// Reaction replaces the assistant's reaction Old on a message with Emoji:
// Old "" only adds, Emoji "" only takes Old off. Emoji are Unicode ("👀");
// a network that names them maps them itself and says so in an error when
// it cannot.
type Reaction struct {
	Chat      string
	MessageID string
	// Sender is who wrote the message, as Inbound.SenderID had it (a
	// network may name a message by chat, sender and id).
	Sender     string
	Old, Emoji string
}

// Sighted is a channel that may not see every message of a group chat
// (a bot that only gets commands and mentions): SightNote says so in a
// sentence or two for the people of the chat, "" when it sees all. botd
// adds it to the first thing it says in a chat it does not know.
type Sighted interface {
	SightNote() string
}

// OutMessage is text for a chat; ThreadID keeps a reply in the thread the
// question was asked in (Slack), ReplyTo quotes a message where supported.
type OutMessage struct {
	Chat     string
	Text     string
	ThreadID string
	ReplyTo  string
}

// OutMedia is a file to send. File was opened and checked by the caller
// (inside the group folder, a regular file with one link); a channel reads
// it only through this descriptor (io.NewSectionReader for each attempt)
// and never reopens it by name, so a file swapped for a link after the
// check cannot be sent instead. The caller closes it.
type OutMedia struct {
	Chat     string
	File     *os.File
	FileName string
	MIME     string
	Caption  string
	ThreadID string
	// Voice asks for a voice note where the network has them (Telegram
	// sendVoice, WhatsApp push-to-talk); elsewhere audio goes as a file.
	Voice bool
}

// Upload is what a network needs of m's file before it sends it: the
// name to show (the file's own when FileName is empty), made safe, and
// its size. Anything but a regular file is refused.
func (m OutMedia) Upload() (name string, size int64, err error) {
	st, err := m.File.Stat()
	if err != nil {
		return "", 0, err
	}
	if !st.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", m.FileName)
	}
	name = m.FileName
	if name == "" {
		name = filepath.Base(m.File.Name())
	}
	return mediaregistry.SafeName(name), st.Size(), nil
}

// Delivery is what the network said about a send.
type Delivery struct {
	MessageIDs []string
}

// Downloader is a channel that opens the bytes of a ref on demand. Only
// the media service calls it, and only when the agent or an MCP client
// asked for the media. Errors wrap ErrTooLarge, ErrForbidden or
// ErrUnavailable when they are one of those.
type Downloader interface {
	// Download returns a stream of the media; size is the expected
	// length or -1.
	Download(ctx context.Context, ref *mediaregistry.MediaReference) (body io.ReadCloser, size int64, err error)
}

// FileDownloader is a channel that writes a ref's bytes straight into the
// cache's temp file (it needs to seek, as WhatsApp decrypts in place). The
// media service prefers it over Downloader: the bytes reach the disk once.
type FileDownloader interface {
	DownloadTo(ctx context.Context, ref *mediaregistry.MediaReference, dst mediaregistry.File) error
}

// DownloadLimiter is a channel whose network bounds a download below
// media.max_download_bytes: the Bot API's 20 MB, or the size a WhatsApp
// sender declared. The media service refuses a ref declared over it before
// any request and caps the stream at it. why names the limit for the error
// message, e.g. "the Bot API download limit (channels.telegram.max_download_bytes)".
type DownloadLimiter interface {
	DownloadLimit(ref *mediaregistry.MediaReference) (max int64, why string)
}

// Download errors the media service maps to IPC error codes.
var (
	ErrTooLarge    = errors.New("media too large for this channel")
	ErrForbidden   = errors.New("media download not permitted")
	ErrUnavailable = errors.New("media no longer available")
)

// Inbound is one received message, already normalised: media are
// registered refs and appear in Text as placeholders.
type Inbound struct {
	ChatID     string // "<channel>:<native id>"
	ChatName   string
	IsGroup    bool
	ID         string
	SenderID   string
	SenderName string
	Text       string
	Time       time.Time
	FromMe     bool
	IsBot      bool
	ReplyTo    string
	ThreadID   string
	// Mentioned is true when the network says the assistant was addressed
	// (an @mention of the bot, a reply to the bot, a DM) even without the
	// trigger word.
	Mentioned bool
	// Edit marks a changed message; Text replaces the stored text.
	Edit bool
	Refs []mediaregistry.MediaReference
	// Links are the link previews the network sent with the message, for
	// Env.Compose to render after the typed text; Compose clears the
	// field, so what reaches the sink is Text.
	Links []LinkPreview
}

// Sink receives what channels hear. The router implements it.
type Sink interface {
	// Registered reports whether chat belongs to a group. Channels register
	// media refs only for registered chats; others keep metadata only.
	Registered(chat string) bool
	// Deliver stores the message and routes it. Channels call it through
	// Env.Deliver, which retries until the store took the message.
	Deliver(ctx context.Context, in Inbound) error
	// Migrated tells the router a chat changed id (Telegram supergroup).
	Migrated(ctx context.Context, from, to string)
}

// DefaultAssistantName is the name chats address botd by when the
// config's assistant_name names none.
const DefaultAssistantName = "Andy"

// Env is what every channel constructor gets; New must not connect.
type Env struct {
	Registry *mediaregistry.Registry
	Sink     Sink
	Log      *slog.Logger
	// AssistantName is used to translate mentions into the trigger and
	// (WhatsApp shared number) to mark the bot's own messages.
	AssistantName string
	// Fence, when set, is asked before anything leaves the process for
	// the network (FencedTransport): a channel installs it where its
	// calls go out, once, not at each call site.
	Fence Fence
	// Inbox holds a message the store refused until it takes it (Deliver);
	// nil uses a shared one whose state nobody shows.
	Inbox *Inbox
}
