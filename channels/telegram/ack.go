package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// ackGate holds back the next getUpdates until every update the previous
// one returned has been handled. go-telegram/bot queues a whole batch in
// a buffered channel and polls again at once with offset = last id + 1,
// which confirms the batch to Telegram before botd stored it: a crash
// then loses those messages for good. Held back, the confirming poll
// only goes out once the sink has them; a crash before that makes
// Telegram hand them out again, and the store's upsert makes that
// harmless.
type ackGate struct {
	mu      sync.Mutex
	fetched int64 // highest update id a getUpdates answer carried
	handled int64 // highest update id whose handler returned
	changed chan struct{}
	// onHold, if set before the channel starts, runs each time a poll is
	// held back: the observable proof a test waits for instead of giving
	// an eager poller "enough" time.
	onHold func()
}

func newAckGate() *ackGate { return &ackGate{changed: make(chan struct{})} }

// wait blocks until every fetched update was handled, or ctx ends.
func (g *ackGate) wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		if g.handled >= g.fetched {
			g.mu.Unlock()
			return nil
		}
		ch := g.changed
		g.mu.Unlock()
		if g.onHold != nil {
			g.onHold()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (g *ackGate) fetchedUpTo(id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fetched = max(g.fetched, id)
}

func (g *ackGate) handledUpTo(id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if id > g.handled {
		g.handled = id
		close(g.changed)
		g.changed = make(chan struct{})
	}
}

func isGetUpdates(req *http.Request) bool {
	return strings.HasSuffix(strings.ToLower(req.URL.Path), "/getupdates")
}

// noteFetched reads the update ids out of a getUpdates answer and puts
// the body back for the library.
func (g *ackGate) noteFetched(resp *http.Response) error {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return err
	}
	var env struct {
		Result []struct {
			ID int64 `json:"update_id"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &env) == nil {
		for _, u := range env.Result {
			g.fetchedUpTo(u.ID)
		}
	}
	return nil
}
