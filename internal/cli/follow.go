package cli

import (
	"context"
	"errors"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/wait"
)

// Waits between attempts to re-open a watch that ended without delivering
// anything or could not be opened (a server restarting): doubled each time
// up to the cap, so a long outage costs one attempt every two seconds.
const (
	followMinBackoff = 100 * time.Millisecond
	followMaxBackoff = 2 * time.Second
)

// follower keeps a watch going across stream ends, broken connections and
// server restarts, re-opening it from the last resourceVersion seen, as
// client-go's RetryWatcher: the events resume where they stopped, none
// repeated and none missed.
type follower[T any] struct {
	open   func(ctx context.Context, rv string) (client.Watch[T], error)
	rvOf   func(client.Event[T]) string // "" when the event carries none
	handle func(client.Event[T]) error
}

// run follows from rv until ctx ends (nil), handle fails, or the server no
// longer holds the resourceVersion (an error for which client.IsExpired
// holds: the caller relists).
func (f *follower[T]) run(ctx context.Context, rv string) error {
	backoff := followMinBackoff
	for ctx.Err() == nil {
		next, delivered, err := f.once(ctx, rv)
		if err != nil && !retryable(err) {
			return err
		}
		rv = next
		if delivered {
			backoff = followMinBackoff
			continue
		}
		delay := backoff
		if d, ok := client.RetryAfter(err); ok {
			delay = d
		}
		if wait.Sleep(ctx, delay) != nil {
			break
		}
		backoff = min(2*backoff, followMaxBackoff)
	}
	return nil
}

// once opens one watch from rv and handles its events until it ends. It
// returns the last resourceVersion, whether any event came, and why the
// stream ended (nil for a clean end).
func (f *follower[T]) once(ctx context.Context, rv string) (string, bool, error) {
	w, err := f.open(ctx, rv)
	if err != nil {
		return rv, false, err
	}
	defer w.Stop()
	delivered := false
	for ev := range w.Events() {
		if ev.Type == client.Error {
			return rv, delivered, ev.Err
		}
		if err := f.handle(ev); err != nil {
			return rv, delivered, handlerError{err}
		}
		if next := f.rvOf(ev); next != "" {
			rv = next
		}
		delivered = true
	}
	return rv, delivered, w.Err()
}

// handlerError is a failure of the event handler: it ends the follow.
type handlerError struct{ error }

func (e handlerError) Unwrap() error { return e.error }

// retryable says whether a watch that failed with err should be opened
// again: after a broken connection, a server error or a 429, but not after
// an expired resourceVersion, a refusal, or the handler's failure.
func retryable(err error) bool {
	var he handlerError
	if errors.As(err, &he) || client.IsExpired(err) {
		return false
	}
	var se *api.StatusError
	if !errors.As(err, &se) {
		return true // the network, or the stream
	}
	return se.Status.Code == 429 || se.Status.Code >= 500
}
