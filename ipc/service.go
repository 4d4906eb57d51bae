package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
)

// ServiceOptions wire the host's request handlers.
type ServiceOptions struct {
	Registry *mediaregistry.Registry
	Cache    *mediaregistry.Cache
	// Channels by name ("telegram", ...). Downloads need the optional
	// channels.Downloader, send_media channels.MediaSender.
	Channels         map[string]channels.Channel
	Groups           *groups.Set
	GroupsDir        string
	MaxDownloadBytes int64
	// DownloadTimeout bounds one download (default 10m).
	DownloadTimeout time.Duration
	Log             *slog.Logger
}

// Service implements Handler: fetch_media, list_media, send_message,
// send_media.
type Service struct {
	o       ServiceOptions
	mu      sync.Mutex
	flights map[string]*flight
}

type flight struct {
	done  chan struct{}
	entry mediaregistry.Entry
	err   *Error
}

var _ Handler = (*Service)(nil)

// NewService returns the handlers.
func NewService(o ServiceOptions) *Service {
	if o.DownloadTimeout <= 0 {
		o.DownloadTimeout = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{o: o, flights: map[string]*flight{}}
}

// Handle dispatches on the request type.
func (s *Service) Handle(ctx context.Context, g *groups.Group, req *Request) (any, *Error) {
	switch req.Type {
	case TypeFetchMedia:
		var a FetchMediaArgs
		if err := decodeArgs(req, &a); err != nil {
			return nil, err
		}
		return s.fetch(ctx, g, a)
	case TypeListMedia:
		var a ListMediaArgs
		if err := decodeArgs(req, &a); err != nil {
			return nil, err
		}
		return s.list(ctx, g, a)
	case TypeSendMessage:
		var a SendMessageArgs
		if err := decodeArgs(req, &a); err != nil {
			return nil, err
		}
		return s.sendMessage(ctx, g, a)
	case TypeSendMedia:
		var a SendMediaArgs
		if err := decodeArgs(req, &a); err != nil {
			return nil, err
		}
		return s.sendMedia(ctx, g, a)
	}
	return nil, Errorf(CodeBadRequest, "unknown request type %q", req.Type)
}

func decodeArgs(req *Request, v any) *Error {
	if len(req.Args) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(req.Args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(CodeBadRequest, "bad arguments for %s: %v", req.Type, err)
	}
	return nil
}

func refError(id string, err error) *Error {
	switch {
	case errors.Is(err, mediaregistry.ErrNotFound):
		return Errorf(CodeNotFound, "no media with ref %s (check the ref in the placeholder, or call list_media)", id)
	case errors.Is(err, mediaregistry.ErrExpired):
		return Errorf(CodeExpired, "media ref %s has expired; ask the sender to share it again", id)
	case errors.Is(err, mediaregistry.ErrForbidden):
		return Errorf(CodeForbidden, "media ref %s does not belong to this group", id)
	}
	return Errorf(CodeInternal, "looking up %s failed", id)
}

func (s *Service) fetch(ctx context.Context, g *groups.Group, a FetchMediaArgs) (*FetchMediaResult, *Error) {
	id := strings.TrimSpace(a.MediaRef)
	id = strings.TrimPrefix(id, "ref:")
	if id == "" {
		return nil, Errorf(CodeBadRequest, "mediaRef is required (the ref:... id from a placeholder)")
	}
	ref, err := s.o.Registry.Get(ctx, g, id)
	if err != nil {
		if rerr := refError(id, err); rerr.Code != CodeInternal {
			return nil, rerr
		}
		s.o.Log.Error("fetch_media: registry", "ref", id, "err", err)
		return nil, refError(id, err)
	}
	entry, cached, ferr := s.cachedOrDownload(ctx, &ref)
	if ferr != nil {
		return nil, ferr
	}
	rel, err := s.materialise(g, &ref, entry)
	if err != nil {
		s.o.Log.Error("fetch_media: materialise", "group", g.Folder, "ref", id, "err", err)
		return nil, Errorf(CodeInternal, "could not save the media into the group folder")
	}
	res := &FetchMediaResult{
		Ref: ref.ID, Kind: string(ref.Kind), Name: mediaregistry.SafeName(ref.FileName), MIME: entry.MIME,
		Size: entry.Size, SHA256: entry.SHA256, Path: rel, Width: ref.Width, Height: ref.Height,
		Caption: mediaregistry.SafeCaption(ref.Caption), Sender: mediaregistry.SafeName(ref.Sender), Cached: cached,
	}
	if d := mediaregistry.CleanMIME(ref.MIME); d != "" && d != entry.MIME {
		res.Declared = d
	}
	if ref.Duration > 0 {
		res.Duration = mediaregistry.FormatDuration(ref.Duration)
	}
	return res, nil
}

// cachedOrDownload serves a ref from the cache, or downloads it once even
// when several callers ask at the same time.
func (s *Service) cachedOrDownload(ctx context.Context, ref *mediaregistry.MediaReference) (mediaregistry.Entry, bool, *Error) {
	if e, ok, err := s.o.Cache.Lookup(ctx, ref.ID); err == nil && ok {
		return e, true, nil
	}
	s.mu.Lock()
	f, joined := s.flights[ref.ID]
	if !joined {
		f = &flight{done: make(chan struct{})}
		s.flights[ref.ID] = f
	}
	s.mu.Unlock()
	if !joined {
		// Detached from the first caller: its cancellation must not fail
		// the others waiting on the same download.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.DownloadTimeout)
		go func() {
			defer cancel()
			f.entry, f.err = s.download(dctx, ref)
			s.mu.Lock()
			delete(s.flights, ref.ID)
			s.mu.Unlock()
			close(f.done)
		}()
	}
	select {
	case <-f.done:
		return f.entry, false, f.err
	case <-ctx.Done():
		return mediaregistry.Entry{}, false, Errorf(CodeDownloadFailed, "cancelled while downloading %s", ref.ID)
	}
}

func (s *Service) download(ctx context.Context, ref *mediaregistry.MediaReference) (mediaregistry.Entry, *Error) {
	max := s.o.MaxDownloadBytes
	if ref.Size > max {
		return mediaregistry.Entry{}, Errorf(CodeTooLarge, "%s is %s, over the %s download limit", ref.ID,
			mediaregistry.FormatSize(ref.Size), mediaregistry.FormatSize(max))
	}
	ch, ok := s.o.Channels[ref.Channel]
	if !ok {
		return mediaregistry.Entry{}, Errorf(CodeDownloadFailed, "the %s channel is not running, so %s cannot be downloaded now", ref.Channel, ref.ID)
	}
	dl, ok := ch.(channels.Downloader)
	if !ok {
		return mediaregistry.Entry{}, Errorf(CodeDownloadFailed, "the %s channel cannot download media", ref.Channel)
	}
	start := time.Now()
	body, _, err := dl.Download(ctx, ref)
	if err != nil {
		return mediaregistry.Entry{}, downloadError(ref, err, s.o.Log)
	}
	defer body.Close()
	e, err := s.o.Cache.Store(ctx, ref.ID, ref.MIME, body, max)
	if err != nil {
		if errors.Is(err, mediaregistry.ErrTooLarge) {
			return mediaregistry.Entry{}, Errorf(CodeTooLarge, "%s is larger than the %s download limit; stopped at the limit", ref.ID, mediaregistry.FormatSize(max))
		}
		return mediaregistry.Entry{}, downloadError(ref, err, s.o.Log)
	}
	s.o.Log.Info("media downloaded", "ref", ref.ID, "channel", ref.Channel, "bytes", e.Size, "mime", e.MIME, "took", time.Since(start).Round(time.Millisecond))
	return e, nil
}

func downloadError(ref *mediaregistry.MediaReference, err error, log *slog.Logger) *Error {
	log.Warn("media download failed", "ref", ref.ID, "channel", ref.Channel, "err", err)
	switch {
	case errors.Is(err, channels.ErrTooLarge):
		return Errorf(CodeTooLarge, "%s is too large for the %s channel to download: %v", ref.ID, ref.Channel, err)
	case errors.Is(err, channels.ErrForbidden):
		return Errorf(CodeForbidden, "downloading %s was refused: %v", ref.ID, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return Errorf(CodeDownloadFailed, "downloading %s failed: the disk is full (no space left for the media cache); nothing was kept, try again once space is freed", ref.ID)
	}
	return Errorf(CodeDownloadFailed, "downloading %s failed: %v", ref.ID, err)
}

// materialise puts the cached blob into groups/<folder>/media/ under a
// name derived from the ref (never from the sender alone) and returns the
// path relative to the group folder.
func (s *Service) materialise(g *groups.Group, ref *mediaregistry.MediaReference, e mediaregistry.Entry) (string, error) {
	// The daemon created the workspace at start; only media/ must exist
	// here, and MkdirAll on an existing folder is one stat.
	ws := groups.Workspace{Root: filepath.Join(s.o.GroupsDir, g.Folder)}
	if err := os.MkdirAll(ws.MediaDir(), 0o750); err != nil {
		return "", err
	}
	name := MediaFileName(ref, e.MIME)
	dest := filepath.Join(ws.MediaDir(), name)
	if fi, err := os.Lstat(dest); err == nil && fi.Mode().IsRegular() && fi.Size() == e.Size {
		return filepath.ToSlash(filepath.Join("media", name)), nil
	}
	tmp := filepath.Join(ws.MediaDir(), ".tmp-"+name)
	os.Remove(tmp)
	src := s.o.Cache.Path(e.SHA256)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			os.Remove(tmp)
			return "", err
		}
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return filepath.ToSlash(filepath.Join("media", name)), nil
}

// MediaFileName is "<ref>_<safe name>" with an extension that matches the
// real type, so a PNG named .pdf is saved as .png and opened as one.
func MediaFileName(ref *mediaregistry.MediaReference, mime string) string {
	base := fsSafe(mediaregistry.SafeName(ref.FileName))
	want := mediaregistry.Ext(mime)
	if ext := filepath.Ext(base); ext != "" && strings.EqualFold(ext, want) {
		return ref.ID + "_" + base
	}
	if base == "" {
		base = strings.ToLower(string(ref.Kind))
	}
	base = strings.TrimSuffix(base, filepath.Ext(base))
	if len(base) > 60 {
		base = base[:60]
	}
	return ref.ID + "_" + base + want
}

// fsSafe keeps file names to a portable set of characters.
func fsSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), "._")
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (s *Service) list(ctx context.Context, g *groups.Group, a ListMediaArgs) (*ListMediaResult, *Error) {
	f := mediaregistry.Filter{Limit: a.Limit}
	if a.Limit < 0 || a.Limit > 200 {
		return nil, Errorf(CodeBadRequest, "limit must be between 1 and 200")
	}
	if a.Kind != "" {
		k, ok := mediaregistry.ParseKind(a.Kind)
		if !ok {
			return nil, Errorf(CodeBadRequest, "unknown kind %q (one of image, video, audio, voice, document, sticker, animation, videonote)", a.Kind)
		}
		f.Kind = k
	}
	refs, err := s.o.Registry.List(ctx, g, f)
	if err != nil {
		s.o.Log.Error("list_media", "group", g.Folder, "err", err)
		return nil, Errorf(CodeInternal, "listing media failed")
	}
	out := &ListMediaResult{Items: make([]MediaItem, 0, len(refs))}
	for _, r := range refs {
		it := MediaItem{Ref: r.ID, Kind: string(r.Kind), Name: mediaregistry.SafeName(r.FileName), Size: r.Size,
			MIME: mediaregistry.CleanMIME(r.MIME), Sender: mediaregistry.SafeName(r.Sender), Time: r.Created.UTC(),
			Caption: mediaregistry.SafeCaption(r.Caption), Expires: r.Expires.UTC()}
		if r.Duration > 0 {
			it.Duration = mediaregistry.FormatDuration(r.Duration)
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}

// target picks the chat a send goes to: the group's own chat, or, for the
// main group only, another registered chat.
func (s *Service) target(g *groups.Group, chat string) (string, channels.Channel, *Error) {
	if chat == "" || g.HasChat(chat) {
		chat = g.Chat
	} else {
		if !g.Main {
			return "", nil, Errorf(CodeForbidden, "this group can only send to its own chat")
		}
		if _, ok := s.o.Groups.ByChat(chat); !ok {
			return "", nil, Errorf(CodeForbidden, "chat %q is not a registered chat", chat)
		}
	}
	name, _, _ := strings.Cut(chat, ":")
	ch, ok := s.o.Channels[name]
	if !ok {
		return "", nil, Errorf(CodeSendFailed, "the %s channel is not running", name)
	}
	return chat, ch, nil
}

func (s *Service) sendMessage(ctx context.Context, g *groups.Group, a SendMessageArgs) (*SendResult, *Error) {
	if strings.TrimSpace(a.Text) == "" {
		return nil, Errorf(CodeBadRequest, "text is required")
	}
	chat, ch, herr := s.target(g, a.Chat)
	if herr != nil {
		return nil, herr
	}
	d, err := ch.Send(ctx, channels.OutMessage{Chat: chat, Text: a.Text})
	if err != nil {
		s.o.Log.Warn("send_message failed", "group", g.Folder, "chat", chat, "err", err)
		return nil, Errorf(CodeSendFailed, "sending to %s failed: %v", chat, err)
	}
	return &SendResult{Chat: chat, MessageIDs: d.MessageIDs}, nil
}

func (s *Service) sendMedia(ctx context.Context, g *groups.Group, a SendMediaArgs) (*SendResult, *Error) {
	ws := groups.Workspace{Root: filepath.Join(s.o.GroupsDir, g.Folder)}
	path, err := ws.Resolve(a.Path)
	if err != nil {
		return nil, Errorf(CodeBadRequest, "%v", err)
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, Errorf(CodeBadRequest, "%s is not a file", a.Path)
	}
	chat, ch, herr := s.target(g, a.Chat)
	if herr != nil {
		return nil, herr
	}
	ms, ok := ch.(channels.MediaSender)
	if !ok {
		return nil, Errorf(CodeSendFailed, "the %s channel cannot send files", ch.Name())
	}
	mime, err := sniffFile(path)
	if err != nil {
		return nil, Errorf(CodeBadRequest, "cannot read %s: %v", a.Path, err)
	}
	d, err := ms.SendMedia(ctx, channels.OutMedia{Chat: chat, Path: path, FileName: filepath.Base(path), MIME: mime, Caption: a.Caption})
	if err != nil {
		s.o.Log.Warn("send_media failed", "group", g.Folder, "chat", chat, "err", err)
		return nil, Errorf(CodeSendFailed, "sending %s to %s failed: %v", a.Path, chat, err)
	}
	return &SendResult{Chat: chat, MessageIDs: d.MessageIDs}, nil
}

func sniffFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, mediaregistry.SniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("sniff: %w", err)
	}
	return mediaregistry.Sniff(head[:n]), nil
}
