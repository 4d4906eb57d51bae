package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/backoff"
	"github.com/go-telegram/bot"
)

// statusError is an HTTP failure without a Bot API JSON body: a 5xx from
// Telegram or a proxy in front of it, or any non-2xx file download.
type statusError struct {
	Code       int
	RetryAfter time.Duration // from a Retry-After header, if any
}

func (e *statusError) Error() string {
	return fmt.Sprintf("http %d %s", e.Code, http.StatusText(e.Code))
}

// statusClient turns 5xx answers into a typed error before go-telegram/bot
// sees them: the library would report them as undecodable bodies (an
// nginx 502 page) or an untyped error, and retry needs to know.
type statusClient struct {
	c     *http.Client
	token string
	acks  *ackGate
}

func (s *statusClient) Do(req *http.Request) (*http.Response, error) {
	poll := s.acks != nil && isGetUpdates(req)
	if poll {
		if err := s.acks.wait(req.Context()); err != nil {
			return nil, err
		}
	}
	resp, err := s.c.Do(req)
	if err != nil {
		return nil, redactURLError(err, s.token)
	}
	if poll && resp.StatusCode == http.StatusOK {
		if err := s.acks.noteFetched(resp); err != nil {
			return nil, redactURLError(err, s.token)
		}
	}
	if resp.StatusCode >= 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, &statusError{Code: resp.StatusCode, RetryAfter: retryAfterHeader(resp.Header)}
	}
	return resp, nil
}

// redactURLError removes the token from the URL a *url.Error carries
// (every Bot API URL contains it), in place, so no layer above can print it.
func redactURLError(err error, token string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact(ue.URL, token)
	}
	return err
}

// redact hides the token in s.
func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "<token>")
}

func retryAfterHeader(h http.Header) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 0
}

// retry runs fn until it succeeds, fails with something not worth
// retrying, or runs out of attempts. A 429 waits the server's
// retry_after; a 5xx (only when idempotent: a send that got a 5xx may
// have gone out) backs off exponentially.
func (t *Telegram) retry(ctx context.Context, idempotent bool, fn func() error) error {
	var err error
	for attempt := 0; attempt < t.maxAttempts; attempt++ {
		err = fn()
		if err == nil {
			return nil
		}
		wait, ok := t.retryWait(err, idempotent, attempt)
		if !ok || attempt == t.maxAttempts-1 {
			return err
		}
		if wait > t.maxRetryWait {
			return fmt.Errorf("%w (retry_after %s is too long to wait)", err, wait)
		}
		t.log.Debug("telegram: retrying after error", "attempt", attempt+1, "wait", wait, "err", redact(err.Error(), t.cfg.Token))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (while waiting to retry: %w)", ctx.Err(), err)
		case <-timer.C:
		}
	}
	return err
}

func (t *Telegram) retryWait(err error, idempotent bool, attempt int) (time.Duration, bool) {
	var tm *bot.TooManyRequestsError
	if errors.As(err, &tm) {
		return time.Duration(max(tm.RetryAfter, 1)) * t.retryAfterUnit, true
	}
	var se *statusError
	if errors.As(err, &se) {
		switch {
		case se.Code == http.StatusTooManyRequests:
			if se.RetryAfter > 0 {
				return time.Duration(se.RetryAfter/time.Second) * t.retryAfterUnit, true
			}
			return backoff.Schedule{Initial: t.backoffBase}.Wait(attempt), true
		case se.Code >= 500 && idempotent:
			if se.RetryAfter > 0 {
				return time.Duration(se.RetryAfter/time.Second) * t.retryAfterUnit, true
			}
			return backoff.Schedule{Initial: t.backoffBase}.Wait(attempt), true
		}
	}
	return 0, false
}
