package watchcache

import (
	"context"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// Backoff of Follow between watches (FollowOptions.Retry).
const (
	defaultFollowRetry = time.Second
	maxFollowRetry     = 30 * time.Second
)

// FollowOptions say what Follow watches and whom it tells. Cache is
// required; every other field may be left zero. Every hook runs on
// Follow's goroutine, one at a time.
type FollowOptions struct {
	// Cache returns the cache to watch, at each start; nil when there is
	// none (the start fails, and is tried again: a resource's cache may be
	// replaced by a successor).
	Cache func() *Cache
	// InitialEvents starts each watch with an ADDED item for every object
	// the cache holds, then OnSynced. Without it a watch starts at the
	// cache's revision: what changed before is not seen, and OnStart is
	// the follower's cue to look for itself.
	InitialEvents bool
	// Fresh, if set, returns a revision the cache must reflect before a
	// watch starts (the store's current one makes the initial events a
	// consistent list, as kube's informers read).
	Fresh func(ctx context.Context) (int64, error)
	// OnStart is called when a watch has begun, before its first item.
	OnStart func()
	// OnSynced is called after the initial events (InitialEvents).
	OnSynced func()
	// Each is given the changes (ADDED, MODIFIED, DELETED), in order, a
	// batch at a time; the slice is reused once it returns, the items'
	// bytes are not.
	Each func(items []Item)
	// Due, if set, says when OnDue is next to be called (none if false);
	// Follow asks it after each batch, and OnDue must move it on.
	Due   func() (time.Time, bool)
	OnDue func()
	// Ended is told why a watch ended or could not start, and how long
	// Follow waits before it starts again.
	Ended func(err error, retry time.Duration)
	// Retry is that wait after a watch that began (default 1 s); each
	// start that fails then waits twice as long as the last, up to 30 s.
	Retry time.Duration
}

// Follow watches a cache until ctx ends, starting again, after a backoff,
// whenever the watch ends or cannot start. It returns once ctx has ended
// and every hook has returned: its caller owns the goroutine it runs on.
func Follow(ctx context.Context, opts FollowOptions) {
	first := opts.Retry
	if first <= 0 {
		first = defaultFollowRetry
	}
	delay := first
	for {
		began, err := watchOnce(ctx, &opts)
		if ctx.Err() != nil {
			return
		}
		if began {
			delay = first
		}
		if opts.Ended != nil {
			opts.Ended(err, delay)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, max(maxFollowRetry, first))
	}
}

// watchOnce runs one watch of opts until it or ctx ends; began says whether
// it started.
func watchOnce(ctx context.Context, opts *FollowOptions) (began bool, err error) {
	c := opts.Cache()
	if c == nil {
		return false, errClosed
	}
	if opts.Fresh != nil {
		rev, err := opts.Fresh(ctx)
		if err != nil {
			return false, err
		}
		if err := c.WaitFresh(ctx, rev); err != nil {
			return false, err
		}
	}
	wo := WatchOptions{InitialEvents: opts.InitialEvents, InitialEventsEnd: opts.InitialEvents}
	if !opts.InitialEvents {
		if err := c.WaitReady(ctx); err != nil { // for a revision to start from
			return false, err
		}
		wo.From = c.Revision()
	}
	w, err := c.Watch(ctx, wo)
	if err != nil {
		return false, err
	}
	defer w.Stop()
	if opts.OnStart != nil {
		opts.OnStart()
	}
	var items []Item
	for ctx.Err() == nil { // Pending need not look at ctx
		if items, err = w.Pending(ctx, items[:0]); err != nil {
			return true, err
		}
		opts.deliver(items)
		at, due := opts.due()
		if due && !at.After(time.Now()) {
			opts.OnDue()
			continue
		}
		if len(items) > 0 {
			continue
		}
		if err := wait(ctx, w, at, due); err != nil {
			return true, err
		}
	}
	return true, ctx.Err()
}

// wait waits until w may have items, ctx ends or, if due, at comes: with
// a timer, not a deadline on Pending's context, which would cut a catch-up
// from the store short and end the watch.
func wait(ctx context.Context, w *Watcher, at time.Time, due bool) error {
	var timeout <-chan time.Time
	if due {
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.Ready():
	case <-timeout:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// deliver gives items' changes to Each, calling OnSynced at the end of the
// initial events: the one BOOKMARK a watcher without a sender sees.
func (opts *FollowOptions) deliver(items []Item) {
	start := 0
	for i, it := range items {
		if it.Type != api.Bookmark {
			continue
		}
		opts.each(items[start:i])
		start = i + 1
		if it.InitialEventsEnd && opts.OnSynced != nil {
			opts.OnSynced()
		}
	}
	opts.each(items[start:])
}

func (opts *FollowOptions) each(items []Item) {
	if len(items) > 0 && opts.Each != nil {
		opts.Each(items)
	}
}

func (opts *FollowOptions) due() (time.Time, bool) {
	if opts.Due == nil {
		return time.Time{}, false
	}
	return opts.Due()
}
