package slack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/botd-dev/botd/mediaregistry"
)

// eventAckWait is how long an Events API request waits for the store
// before it is answered 503: under Slack's 3 s.
const eventAckWait = 2500 * time.Millisecond

// maxEventBody caps an Events API request body; real events are a few KB.
const maxEventBody = 1 << 20

// EventsHandler serves Slack's Events API: it verifies the request
// signature with the signing secret (401 when it does not match), answers
// url_verification, and queues event callbacks for ctx's lifetime. Start
// serves it on channels.slack.listen in events mode; it is exported so the
// daemon could mount it on a shared server instead.
func (s *Slack) EventsHandler(ctx context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		sv, err := slackapi.NewSecretsVerifier(r.Header, s.cfg.SigningSecret)
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil {
			// Not from Slack (or replayed late): say nothing more.
			s.log.Warn("slack events: rejected request with a bad signature", "remote", r.RemoteAddr)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
		if err != nil {
			http.Error(w, "unparseable event", http.StatusBadRequest)
			return
		}
		switch ev.Type {
		case slackevents.URLVerification:
			uv, ok := ev.Data.(*slackevents.EventsAPIURLVerificationEvent)
			if !ok {
				http.Error(w, "bad url_verification", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"challenge": uv.Challenge})
		case slackevents.CallbackEvent:
			// 200 only once the store holds the event. Slack waits 3 s for
			// the answer; an event the store has not taken by then is
			// answered 503 and Slack sends it again (its retry joins the
			// event still queued here, so it is stored once).
			stored := make(chan struct{})
			var once sync.Once
			s.enqueue(ctx, ev, func() { once.Do(func() { close(stored) }) })
			t := time.NewTimer(eventAckWait)
			defer t.Stop()
			select {
			case <-stored:
				w.WriteHeader(http.StatusOK)
			case <-t.C:
				http.Error(w, "not stored yet", http.StatusServiceUnavailable)
			case <-r.Context().Done():
			}
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
}

// recent is a bounded set of recently seen keys, oldest forgotten first.
type recent struct {
	mu    sync.Mutex
	max   int
	order []string
	set   map[string]struct{}
}

func newRecent(max int) *recent {
	return &recent{max: max, set: make(map[string]struct{}, max)}
}

// add reports whether key is new.
func (r *recent) add(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.set[key]; ok {
		return false
	}
	r.set[key] = struct{}{}
	r.order = append(r.order, key)
	if len(r.order) > r.max {
		delete(r.set, r.order[0])
		r.order = r.order[1:]
	}
	return true
}

// refCache remembers the refs registered for the files of a message, so
// an edit of that message (or an unfurl, which Slack also reports as
// message_changed) reuses them instead of registering duplicates.
type refCache = memo[mediaregistry.MediaReference]

func newRefCache(max int) *refCache { return newMemo[mediaregistry.MediaReference](max) }

// memo is a bounded map, oldest key forgotten first.
type memo[V any] struct {
	mu    sync.Mutex
	max   int
	order []string
	m     map[string]V
}

func newMemo[V any](max int) *memo[V] {
	return &memo[V]{max: max, m: make(map[string]V, max)}
}

func (c *memo[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *memo[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok {
		c.order = append(c.order, key)
	}
	c.m[key] = v
	if len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}
