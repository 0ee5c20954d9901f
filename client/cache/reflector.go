package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/wait"
)

// ReflectorStore is the subset of a store the Reflector writes: a DeltaFIFO,
// or anything that keeps a copy of the server's state.
type ReflectorStore[T any] interface {
	Add(obj T)
	Update(obj T)
	Delete(obj T)
	// Replace sets the whole state, as of resourceVersion.
	Replace(list []T, resourceVersion string)
}

var _ ReflectorStore[client.Object] = (*DeltaFIFO[client.Object])(nil)

// PartialReplacer is a ReflectorStore that takes a LIST page by page: the
// Reflector hands it each page as it arrives (and a streaming list's
// objects in parts of the page size), so that its consumer works on the
// first pages while the next are read and decoded. A list begins with
// BeginReplace (which abandons one begun before and not ended), and ends
// with EndReplace, which replaces the state with what its parts listed.
type PartialReplacer[T any] interface {
	BeginReplace()
	ReplacePart(objs []T)
	EndReplace(resourceVersion string)
}

var _ PartialReplacer[client.Object] = (*DeltaFIFO[client.Object])(nil)

// Tunables of the Reflector, with client-go's values where it has one.
const (
	// DefaultPageSize is the limit of each LIST page (client-go's pager).
	DefaultPageSize = 500
	// DefaultMinWatchTimeout is the lower bound of a watch's randomised
	// timeoutSeconds, drawn from [min, 2·min): spread so that watchers of a
	// restarted server do not all come back at once (kubernetes#6770).
	DefaultMinWatchTimeout = 5 * time.Minute
	// DefaultInitialEventsTimeout is how long a streaming list may go
	// without an event before its initial-events-end bookmark before the
	// Reflector gives up on it and lists instead. client-go waits forever
	// (kubernetes#140890); a conforming server sends the bookmark within a
	// few seconds of the last initial event (KEP-3157: about 6 s at most).
	DefaultInitialEventsTimeout = 20 * time.Second
	// watchStallGrace is how long past its timeoutSeconds a silent watch is
	// kept before the Reflector ends it itself (a dead connection the
	// server's timeout cannot close).
	watchStallGrace = 30 * time.Second
	// veryShortWatch: a watch that ends this soon with no event delivered
	// nothing (client-go's "very short watch").
	veryShortWatch = time.Second
	// emptyRewatches is how many watches in a row may end having delivered
	// nothing and be reopened at once; the next waits out the backoff, so
	// that a server or proxy that closes every watch at once is not hit in
	// a tight loop, while one cut now and then costs no delay.
	emptyRewatches = 1
	// maxStreamCuts is how many streaming lists in a row may be cut
	// before their end, having delivered, before one sync lists instead.
	maxStreamCuts = 3
)

// errEmptyWatches is reported when watches keep ending with nothing
// delivered.
var errEmptyWatches = errors.New("watches keep ending with no event")

// ReflectorOptions configure a Reflector. The zero value is usable.
type ReflectorOptions struct {
	// Name appears in errors and logs.
	Name string
	// LabelSelector and FieldSelector restrict what is listed and watched.
	LabelSelector, FieldSelector string
	// PageSize is each LIST page's limit; 0 means DefaultPageSize.
	PageSize int64
	// UseWatchList makes the Reflector load the state with a streaming
	// list (a watch with sendInitialEvents=true) instead of LIST, falling
	// back to LIST when the server cannot do it. The end of the initial
	// events is the bookmark with client.Event.InitialEventsEnd set, so any
	// T works, with or without annotations.
	UseWatchList bool
	// InitialEventsTimeout: see DefaultInitialEventsTimeout (0 means it).
	InitialEventsTimeout time.Duration
	// MinWatchTimeout: see DefaultMinWatchTimeout; lower values are raised to it.
	MinWatchTimeout time.Duration
	// Backoff spaces retries after failures; the zero value means
	// DefaultBackoff().
	Backoff Backoff
	// WatchErrorHandler, if set, is called with every list or watch error
	// the Reflector recovers from; otherwise errors are logged.
	WatchErrorHandler func(err error)
	// Logger logs errors when WatchErrorHandler is nil; nil means slog.Default().
	Logger *slog.Logger
}

func (o ReflectorOptions) withDefaults() ReflectorOptions {
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.InitialEventsTimeout == 0 {
		o.InitialEventsTimeout = DefaultInitialEventsTimeout
	}
	o.MinWatchTimeout = max(o.MinWatchTimeout, DefaultMinWatchTimeout)
	if o.Backoff == (Backoff{}) {
		o.Backoff = DefaultBackoff()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ReflectorStats count what a Reflector has asked of the server, so tests
// and operators can tell a healthy watch from a relist loop.
type ReflectorStats struct {
	ListCalls          int64 // pages asked for (ListerWatcher.List calls, or a PageLister's pages)
	WatchCalls         int64 // ListerWatcher.Watch calls, streaming lists included
	Syncs              int64 // times the whole state was loaded (Replace)
	Relists            int64 // Syncs after the first: each one follows a 410
	WatchListFallbacks int64 // streaming lists replaced by a LIST
	Errors             int64 // errors recovered from
}

// Reflector keeps a ReflectorStore equal to the server's state of one
// resource: it lists (or streams a list), then watches from the list's
// resourceVersion, re-watching from the last resourceVersion seen whenever a
// watch ends and listing again only when the server no longer has that
// resourceVersion (410 Expired).
type Reflector[T client.Object] struct {
	lw    client.ListerWatcher[T]
	store ReflectorStore[T]
	opts  ReflectorOptions

	// Owned by Run's goroutine.
	backoff *backoffState
	// rvUnavailable: the last RV was refused (410, too large), or a list
	// failed after its first pages were applied: list from "", the current
	// state, which is never older than anything the store was given.
	rvUnavailable bool
	watchListOff  bool // the server cannot stream lists: always LIST
	empty         int  // watches and streams in a row that ended having delivered nothing
	streamCuts    int  // streaming lists in a row cut before their end after delivering

	mu       sync.Mutex
	lastRV   string         // guarded by mu
	lastSync time.Time      // guarded by mu
	stats    ReflectorStats // guarded by mu
}

// NewReflector returns a Reflector that keeps store in sync through lw.
func NewReflector[T client.Object](lw client.ListerWatcher[T], store ReflectorStore[T], opts ReflectorOptions) *Reflector[T] {
	opts = opts.withDefaults()
	return &Reflector[T]{lw: lw, store: store, opts: opts, backoff: newBackoffState(opts.Backoff)}
}

// LastSyncResourceVersion returns the resourceVersion the store reflects:
// the last list's, then the last watch event's or bookmark's.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRV
}

// LastSyncTime returns when the server last confirmed the store current: a
// list, a watch event or a bookmark. A health check can compare it with the
// bookmark interval to spot a dead watch.
func (r *Reflector[T]) LastSyncTime() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastSync
}

// Stats returns the Reflector's counters.
func (r *Reflector[T]) Stats() ReflectorStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

func (r *Reflector[T]) count(f func(*ReflectorStats)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.stats)
}

// progress records that the store reflects resourceVersion rv.
func (r *Reflector[T]) progress(rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rv != "" {
		r.lastRV = rv
	}
	r.lastSync = time.Now()
}

// Run lists and watches until ctx is done. sync loads the state (LIST, or
// a streaming list, afterStream deciding after each that fails), then
// listAndWatch watches from its resourceVersion, afterWatch deciding after
// each watch (reflector_next.go); a 410 or a failed list goes back to sync
// after the backoff.
func (r *Reflector[T]) Run(ctx context.Context) {
	for {
		err := r.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		if !r.retryAfter(ctx, err) {
			return
		}
	}
}

// retryAfter reports err and waits before the next attempt: as long as a 429
// asked, or the backoff's next delay. It returns false if ctx ended first.
func (r *Reflector[T]) retryAfter(ctx context.Context, err error) bool {
	r.report(err)
	d, ok := client.RetryAfter(err)
	if !ok || !client.IsTooManyRequests(err) {
		d = r.backoff.next()
	}
	return wait.Sleep(ctx, d) == nil
}

func (r *Reflector[T]) report(err error) {
	r.count(func(s *ReflectorStats) { s.Errors++ })
	err = fmt.Errorf("reflector %s: %w", r.opts.Name, err)
	switch {
	case r.opts.WatchErrorHandler != nil:
		r.opts.WatchErrorHandler(err)
	case client.IsExpired(err):
		r.opts.Logger.Debug("relisting", "err", err)
	case isWatchCut(err):
		// Routine on a flaky network: client-go logs it at V(4).
		r.opts.Logger.Debug("watch cut, watching again", "err", err)
	default:
		r.opts.Logger.Warn("list-watch failed", "err", err)
	}
}

// listAndWatch loads the state, then watches until the server says the
// last resourceVersion is gone (the returned 410 Expired) or ctx ends;
// afterWatch decides what follows each watch.
func (r *Reflector[T]) listAndWatch(ctx context.Context) error {
	w, err := r.sync(ctx)
	if err != nil {
		return err
	}
	for {
		var end ending
		if w == nil {
			w, end.err = r.startWatch(ctx)
		}
		if w != nil {
			end = r.consume(ctx, w)
			w.Stop()
			w = nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		act, err := r.afterWatch(end)
		if act == relist {
			return err // Run reports it and waits out the backoff
		}
		if !r.pause(ctx, act, err) {
			return ctx.Err()
		}
	}
}

// sync loads the whole state into the store: with a streaming list, whose
// stream it returns to go on as the watch, or with LIST. afterStream
// decides what follows a streaming list that failed.
func (r *Reflector[T]) sync(ctx context.Context) (client.Watch[T], error) {
	for r.opts.UseWatchList && !r.watchListOff {
		w, end := r.watchList(ctx)
		if end.err == nil {
			r.streamCuts = 0
			return w, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		act, err := r.afterStream(end)
		if act == relist {
			r.count(func(s *ReflectorStats) { s.WatchListFallbacks++ })
			r.report(fmt.Errorf("falling back to LIST: %w", err))
			break
		}
		if !r.pause(ctx, act, err) {
			return nil, ctx.Err()
		}
	}
	return nil, r.list(ctx)
}

// pause reports err, if any, and waits as act says: not at all (again), or
// the backoff or a 429's Retry-After (againLater). It returns false if ctx
// ended first.
func (r *Reflector[T]) pause(ctx context.Context, act action, err error) bool {
	if act == againLater {
		return r.retryAfter(ctx, err)
	}
	if err != nil {
		r.report(err)
	}
	return true
}

// replaced records that the store holds the full state at rv.
func (r *Reflector[T]) replaced(rv string) {
	r.rvUnavailable = false
	r.progress(rv)
	r.count(func(s *ReflectorStats) {
		s.Syncs++
		if s.Syncs > 1 {
			s.Relists++
		}
	})
}

func (r *Reflector[T]) baseOptions() client.ListOptions {
	return client.ListOptions{LabelSelector: r.opts.LabelSelector, FieldSelector: r.opts.FieldSelector}
}

// watchTimeout draws a watch's timeoutSeconds from [min, 2·min).
func (r *Reflector[T]) watchTimeout() time.Duration {
	minimum := r.opts.MinWatchTimeout
	return (minimum + time.Duration(rand.Int64N(int64(minimum)))).Truncate(time.Second)
}

// startWatch opens a watch from the last resourceVersion.
func (r *Reflector[T]) startWatch(ctx context.Context) (client.Watch[T], error) {
	opts := r.baseOptions()
	opts.ResourceVersion = r.LastSyncResourceVersion()
	opts.AllowWatchBookmarks = true
	opts.TimeoutSeconds = int64(r.watchTimeout() / time.Second)
	r.count(func(s *ReflectorStats) { s.WatchCalls++ })
	w, err := r.lw.Watch(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("watch from %q: %w", opts.ResourceVersion, err)
	}
	return watchWithTimeout[T]{Watch: w, timeout: time.Duration(opts.TimeoutSeconds) * time.Second}, nil
}

// watchWithTimeout remembers the timeout a watch was opened with.
type watchWithTimeout[T any] struct {
	client.Watch[T]
	timeout time.Duration
}

// consume applies a watch's events to the store until it ends, and says
// how it ended.
func (r *Reflector[T]) consume(ctx context.Context, w client.Watch[T]) ending {
	timeout := r.opts.MinWatchTimeout * 2
	if wt, ok := w.(watchWithTimeout[T]); ok {
		timeout = wt.timeout
	}
	stall := time.NewTimer(timeout + watchStallGrace)
	defer stall.Stop()
	start, events := time.Now(), 0
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				end := ending{delivered: deliveredAny(events, start)}
				if err := w.Err(); err != nil {
					end.err = fmt.Errorf("watch: %w", err)
				}
				return end
			}
			if err := r.apply(ev); err != nil {
				return ending{err: err, delivered: events > 0}
			}
			events++
		case <-stall.C:
			return ending{err: ErrWatchStalled, delivered: true} // it lived for minutes
		case <-ctx.Done():
			return ending{err: ctx.Err()}
		}
	}
}

// deliveredAny says whether a stream that began at start and gave events
// delivered anything: an event, or a second of life.
func deliveredAny(events int, start time.Time) bool {
	return events > 0 || time.Since(start) >= veryShortWatch
}

// apply writes one watch event to the store.
func (r *Reflector[T]) apply(ev client.Event[T]) error {
	switch ev.Type {
	case client.Added:
		r.store.Add(ev.Object)
	case client.Modified:
		r.store.Update(ev.Object)
	case client.Deleted:
		r.store.Delete(ev.Object)
	case client.Bookmark:
	case client.Error:
		return eventError(ev.Err)
	default:
		return fmt.Errorf("watch event of unknown type %q", ev.Type)
	}
	r.progress(ev.Object.GetResourceVersion())
	return nil
}

// eventError is the error an ERROR event ends its watch with.
func eventError(err error) error {
	if err == nil {
		return errors.New("watch ERROR event without a Status")
	}
	return fmt.Errorf("watch ERROR event: %w", err)
}
