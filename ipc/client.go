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
)

// ErrNoHost means no response arrived before the deadline: the host is
// probably not running.
var ErrNoHost = errors.New("no answer from the botd host (is `botd run` running?)")

// Client is the agent side: it writes requests and waits for responses.
// One Client serves many concurrent calls over one fsnotify watch.
type Client struct {
	layout Layout

	mu      sync.Mutex
	watcher *fsnotify.Watcher
	waiters map[string]chan struct{}
	werr    error
}

// NewClient returns a client for one group's IPC folder. No I/O happens
// until the first call.
func NewClient(l Layout) *Client {
	return &Client{layout: l, waiters: map[string]chan struct{}{}}
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
// (may be nil). A typed failure comes back as *Error; a missing answer by
// ctx's deadline as ErrNoHost.
func (c *Client) Call(ctx context.Context, typ string, args, result any) error {
	if err := c.start(); err != nil {
		return err
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
			// Withdraw the request if the host has not taken it yet, so a
			// late host does not act on a call nobody waits for.
			os.Remove(filepath.Join(c.layout.Requests(), req.ID+".json"))
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("ipc %s: %w", typ, ErrNoHost)
			}
			return ctx.Err()
		}
	}
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
			return &Error{Code: CodeInternal, Message: "the host failed without a reason"}
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
