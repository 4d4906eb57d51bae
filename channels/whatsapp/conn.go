package whatsapp

import (
	"context"
	"errors"
	"time"

	"github.com/botd-dev/botd/internal/backoff"
	"go.mau.fi/whatsmeow"
)

type stateKind int

const (
	stConnected stateKind = iota + 1
	stDisconnected
	stStopped // logged out, replaced, outdated: reconnecting cannot help
)

type connState struct {
	kind stateKind
	wait time.Duration // minimum wait before reconnecting (temporary ban)
	err  error         // why the channel stopped
}

// pushState hands a connection event to the run loop without blocking
// whatsmeow. A stop also takes effect at once, so sends fail even if the
// loop is busy.
func (w *WhatsApp) pushState(s connState) {
	if s.kind == stStopped {
		w.stop(s.err)
	}
	select {
	case w.states <- s:
	default:
		w.log.Warn("whatsapp: connection event dropped; state queue full")
	}
}

func (w *WhatsApp) stop(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopErr == nil {
		w.stopErr = err
	}
}

func (w *WhatsApp) stopped() error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.stopErr
}

// run keeps c connected until ctx ends or WhatsApp says reconnecting is
// pointless. first receives the outcome of the first login (nil once
// connected, the stop error otherwise). Only this channel stops: the
// daemon and the other channels go on.
func (w *WhatsApp) run(ctx context.Context, c conn, first chan<- error) {
	defer c.Disconnect()
	report := func(err error) {
		if first != nil {
			first <- err
			first = nil
		}
	}
	attempt := 0
	var minWait time.Duration
	for {
		if err := w.stopped(); err != nil {
			w.logStopped(err)
			report(err)
			return
		}
		err := c.ConnectContext(ctx)
		if err != nil && !errors.Is(err, whatsmeow.ErrAlreadyConnected) {
			if ctx.Err() != nil {
				return
			}
			d := w.backoff(attempt)
			attempt++
			w.log.Warn("whatsapp: connect failed; retrying", "err", err, "in", d.Round(time.Millisecond))
			if !w.sleep(ctx, d) {
				return
			}
			continue
		}
	connected:
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-w.states:
				switch s.kind {
				case stConnected:
					attempt = 0
					w.log.Info("whatsapp: logged in")
					report(nil)
				case stDisconnected:
					if s.wait > minWait {
						minWait = s.wait
					}
					// Late duplicates (a ConnectFailure plus its
					// Disconnected) must not tear down a good connection.
					if c.IsConnected() && s.wait == 0 {
						continue
					}
					break connected
				case stStopped:
					w.logStopped(s.err)
					report(s.err)
					return
				}
			}
		}
		d := max(w.backoff(attempt), minWait)
		minWait = 0
		attempt++
		w.log.Warn("whatsapp: disconnected; reconnecting", "in", d.Round(time.Millisecond))
		if !w.sleep(ctx, d) {
			return
		}
	}
}

func (w *WhatsApp) logStopped(err error) {
	w.log.Error("whatsapp channel stopped; other channels keep running", "reason", err.Error())
}

// backoff is capped exponential with equal jitter: half the step fixed,
// half random, so many restarted daemons do not reconnect in lockstep.
func (w *WhatsApp) backoff(attempt int) time.Duration {
	return backoff.Schedule{Initial: w.backoffBase, Max: w.backoffMax, Jitter: w.jitter}.Wait(attempt)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
