package web

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/connlimit"
)

// The defaults of the channel's limits (channels.web.*). The connection
// cap and the server's timeouts are connlimit's, as for `botd mcp --http`;
// a browser opens at most six connections to a server and a person a few
// tabs; a person types a message every few seconds at most, and a busy
// room of a dozen people stays under the room rate.
const (
	DefaultMaxConns             = connlimit.DefaultMaxConns
	DefaultMaxStreamsPerSession = 8
	DefaultPostsPerMinute       = 20
	DefaultRoomPostsPerMinute   = 60
	// minBurst is the fewest posts a session or room may make at once
	// before the rate applies (a few files one after another).
	minBurst = 5
)

// burstOf is a bucket's size for a rate: a quarter of a minute's posts,
// at least minBurst.
func burstOf(perMinute int) int { return max(minBurst, perMinute/4) }

// withDefaults fills what the config left zero: the one home of the
// section's defaults.
func (c Config) withDefaults() Config {
	c.Listen = cmp.Or(c.Listen, DefaultListen)
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns)
	c.MaxStreamsPerSession = cmp.Or(c.MaxStreamsPerSession, DefaultMaxStreamsPerSession)
	c.PostsPerMinute = cmp.Or(c.PostsPerMinute, DefaultPostsPerMinute)
	c.RoomPostsPerMinute = cmp.Or(c.RoomPostsPerMinute, DefaultRoomPostsPerMinute)
	return c
}

// bucket is a token bucket: burst posts at once, refilled at perMinute.
// The zero bucket is full.
type bucket struct {
	used float64 // tokens spent and not yet refilled
	at   time.Time
}

// take spends a token, or says how long until one is back.
func (b *bucket) take(now time.Time, perMinute, burst int) (bool, time.Duration) {
	rate := float64(perMinute) / float64(time.Minute) // tokens per ns
	if !b.at.IsZero() {
		b.used = math.Max(0, b.used-float64(now.Sub(b.at))*rate)
	}
	b.at = now
	if b.used+1 <= float64(burst) {
		b.used++
		return true, 0
	}
	wait := time.Duration((b.used + 1 - float64(burst)) / rate)
	return false, wait
}

// roomRate is a room's bucket, shared by everyone posting there.
type roomRate struct {
	mu sync.Mutex
	b  bucket
}

func (r *roomRate) take(now time.Time, perMinute, burst int) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.take(now, perMinute, burst)
}

// tooMany answers 429 with Retry-After (whole seconds, at least one) and
// a sentence the page shows.
func (w *Web) tooMany(rw http.ResponseWriter, r *http.Request, wait time.Duration, msg string) {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	rw.Header().Set("Retry-After", strconv.Itoa(secs))
	w.fail(rw, r, http.StatusTooManyRequests, fmt.Sprintf("%s; try again in %d s", msg, secs))
}
