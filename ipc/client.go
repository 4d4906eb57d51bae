package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/botd-dev/botd/tools"
)

// ErrNoHost (tools.ErrNoHost) means no response arrived before the deadline and no host ever
// looked at the request. The tool contract owns it: every face reads it as
// no_host.
var ErrNoHost = tools.ErrNoHost

// Client is the agent side: it writes requests and waits for responses.
// One Client serves many concurrent calls over one fsnotify watch.
type Client struct {
	layout Layout
	types  Types // which requests are repeatable: the wording of busy and in_progress

	mu      sync.Mutex
	watcher *fsnotify.Watcher
	waiters map[string]chan struct{}
	werr    error
}

// NewClient returns a client for one group's IPC folder speaking types
// (tools.IPCTypes()). No I/O happens until the first call.
func NewClient(l Layout, types Types) *Client {
	return &Client{layout: l, types: types, waiters: map[string]chan struct{}{}}
}

// safetyPoll is how often a waiting call looks for its response even
// without an fsnotify event; inotify can miss events on network
// filesystems. Events, not this, make calls fast.
const safetyPoll = time.Second

func (c *Client) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watcher != nil || c.werr != nil {
		return c.werr
	}
	if err := c.layout.Ensure(); err != nil {
		c.werr = err
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(c.layout.Responses())
	}
	if err != nil {
		// Without inotify the safety poll still finds responses.
		if w != nil {
			w.Close()
		}
		return nil
	}
	c.watcher = w
	go c.loop(w)
	return nil
}

func (c *Client) loop(w *fsnotify.Watcher) {
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			id := strings.TrimSuffix(filepath.Base(ev.Name), ".json")
			c.mu.Lock()
			ch := c.waiters[id]
			c.mu.Unlock()
			if ch != nil {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			// Overflow or another watch error: wake everyone to look.
			c.mu.Lock()
			for _, ch := range c.waiters {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			c.mu.Unlock()
		}
	}
}

// Close stops the watch.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watcher != nil {
		err := c.watcher.Close()
		c.watcher = nil
		return err
	}
	return nil
}

// Call sends a request of type typ and decodes the result into result
// (may be nil). A typed failure comes back as *tools.Error. When ctx's deadline
// passes first: an *tools.Error with tools.CodeInProgress if the host has claimed the
// request (its message says how far it got: the work goes on), tools.CodeBusy if
// the host saw it but never started it (it is withdrawn: not carried out),
// else tools.ErrNoHost (withdrawn too).
func (c *Client) Call(ctx context.Context, typ string, args, result any) error {
	if err := c.start(); err != nil {
		return err
	}
	if err := c.layout.check(); err != nil {
		return fmt.Errorf("ipc %s: %w", typ, err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("ipc %s: %w", typ, err)
	}
	req := Request{Version: Version, ID: NewID(), Type: typ, Args: raw, Created: time.Now().UTC()}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("ipc %s: %w", typ, err)
	}
	wake := make(chan struct{}, 1)
	c.mu.Lock()
	c.waiters[req.ID] = wake
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiters, req.ID)
		c.mu.Unlock()
	}()
	if err := WriteAtomic(c.layout.Requests(), req.ID+".json", body); err != nil {
		return fmt.Errorf("ipc %s: %w", typ, err)
	}
	respPath := filepath.Join(c.layout.Responses(), req.ID+".json")
	tick := time.NewTicker(safetyPoll)
	defer tick.Stop()
	for {
		resp, err := readResponse(respPath)
		if err == nil {
			os.Remove(respPath)
			return decodeResult(typ, resp, result)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("ipc %s: %w", typ, err)
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-ctx.Done():
			return c.giveUp(ctx, typ, req.ID, respPath, result)
		}
	}
}

// giveUp settles a call whose ctx ended before the answer came: withdraw
// the request if the host has not claimed it, so a late host does not act
// on a call nobody waits for, and tell the caller what became of it.
func (c *Client) giveUp(ctx context.Context, typ, id, respPath string, result any) error {
	if resp, err := readResponse(respPath); err == nil {
		os.Remove(respPath)
		return decodeResult(typ, resp, result)
	}
	err := os.Remove(filepath.Join(c.layout.Requests(), id+".json"))
	withdrawn := err == nil
	if !withdrawn && errors.Is(err, os.ErrNotExist) {
		// Claimed, or answered a moment ago.
		if resp, err := readResponse(respPath); err == nil {
			os.Remove(respPath)
			return decodeResult(typ, resp, result)
		}
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err()
	}
	p := readProgress(filepath.Join(c.layout.Progress(), id+".json"), id)
	now := time.Now()
	switch {
	case withdrawn && p != nil && now.Sub(p.Updated) <= progressFresh:
		return &tools.Error{Code: tools.CodeBusy, Message: busyMessage(c.types.Repeatable(typ))}
	case withdrawn || !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("ipc %s: %w", typ, tools.ErrNoHost)
	}
	return &tools.Error{Code: tools.CodeInProgress, Message: inProgressMessage(c.types.Repeatable(typ), p, now)}
}

// readProgress returns the host's progress file for id, or nil.
func readProgress(path, id string) *progressFile {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var p progressFile
	if json.Unmarshal(b, &p) != nil || p.ID != id {
		return nil
	}
	return &p
}

func readResponse(path string) (*Response, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Response
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("malformed response %s: %w", filepath.Base(path), err)
	}
	return &r, nil
}

func decodeResult(typ string, r *Response, result any) error {
	if r.Version != Version {
		return fmt.Errorf("ipc %s: host speaks protocol version %d, this client %d", typ, r.Version, Version)
	}
	if !r.OK {
		if r.Error == nil {
			return &tools.Error{Code: tools.CodeInternal, Message: "the host failed without a reason"}
		}
		return r.Error
	}
	if result == nil || len(r.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("ipc %s: malformed result: %w", typ, err)
	}
	return nil
}
