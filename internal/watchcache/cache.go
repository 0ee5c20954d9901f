package watchcache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unique"

	"github.com/listwatch/listwatch/internal/lockrank"
	"github.com/listwatch/listwatch/storage"
)

// Config configures a Cache.
type Config struct {
	Storage storage.Interface
	// Prefix is the storage prefix of the resource's objects.
	Prefix string
	Codec  Codec
	// RingMaxEvents caps the events kept for watchers to resume from.
	RingMaxEvents int
	// RingMinEvents are kept whatever their age, within the byte bounds.
	RingMinEvents int
	// RingMaxAge is how long events are kept beyond RingMinEvents.
	RingMaxAge time.Duration
	// RingMaxBytes bounds the bytes the ring's events pin (eventBytes):
	// the oldest go first, however few the ring then keeps.
	RingMaxBytes int64
	// Budget, if set, bounds the bytes pinned by the rings of every cache
	// that shares it: while they are over it, a cache holding more than
	// its share (Budget.share) drops its oldest events.
	Budget *Budget
	// WatcherBufferBytes bounds the object bytes a watcher may have queued
	// before it is parked and catches up on its own.
	WatcherBufferBytes int
	// ProgressInterval is how often the cache asks the store how far it has
	// seen it, so that its revision moves with writes to other prefixes.
	ProgressInterval time.Duration
	// UnconvertibleRelist is how long the cache resumes its watch at a
	// value that does not convert (Unconvertible) before it lists instead:
	// a list reads the current values, so one deleted or rewritten since
	// no longer stops it. kube's cacher retries its watch as long (its
	// reflector's MaxInternalErrorRetryDuration, 30 s) before it relists.
	UnconvertibleRelist time.Duration
	// Logger receives errors of the upstream watch; nil means slog.Default().
	Logger *slog.Logger
	// Observer is told what the cache does, for metrics; nil means nothing is.
	Observer Observer
	// WakePolled, if set, is given the Wakers of polled watchers that a
	// batch of events may concern (a namespace's, or those of every
	// namespace; see WatchOptions.Waker), and their group's lane
	// (lane.go), instead of each being woken, so that a pool can share
	// them out. It runs under the cache's lock and must not block; the
	// batch's slices are never changed afterwards, so they may be kept.
	WakePolled func(*PollBatch)
}

// DefaultConfig holds the defaults a zero Config field takes. The ring keeps
// at least 1,024 events and, up to 100,000 (kube-apiserver's watch cache
// grows to 102,400), every event of the last 10 minutes: far longer than
// kube-apiserver's 75 s, so a watcher that was disconnected for minutes
// resumes from memory; older positions are served from the store's
// history. Bytes bound it first: 64 MiB, a quarter of the server's
// DefaultBudgetBytes, holds some 78,000 creates of 150-byte objects,
// 21,000 updates of 1 KiB ones (each charged twice: see eventBytes), or
// 36 updates of 900 KiB ones.
func DefaultConfig() Config {
	return Config{
		RingMaxEvents:       100_000,
		RingMinEvents:       1024,
		RingMaxAge:          10 * time.Minute,
		RingMaxBytes:        64 << 20,
		WatcherBufferBytes:  4 << 20,
		ProgressInterval:    time.Second,
		UnconvertibleRelist: 30 * time.Second,
	}
}

func (c *Config) setDefaults() {
	d := DefaultConfig()
	c.RingMaxEvents = cmp.Or(c.RingMaxEvents, d.RingMaxEvents)
	c.RingMinEvents = cmp.Or(c.RingMinEvents, d.RingMinEvents)
	c.RingMaxAge = cmp.Or(c.RingMaxAge, d.RingMaxAge)
	c.RingMaxBytes = cmp.Or(c.RingMaxBytes, d.RingMaxBytes)
	c.WatcherBufferBytes = cmp.Or(c.WatcherBufferBytes, d.WatcherBufferBytes)
	c.ProgressInterval = cmp.Or(c.ProgressInterval, d.ProgressInterval)
	c.UnconvertibleRelist = cmp.Or(c.UnconvertibleRelist, d.UnconvertibleRelist)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
}

// DefaultBudgetBytes is the server's budget (Budget) over every
// resource's ring: a few hundred MiB, the memory a small control plane
// gives its watch cache, four resources' RingMaxBytes.
const DefaultBudgetBytes = 256 << 20

// DefaultReplayBudgetBytes is the server's bound (Budget) on the objects
// that watchers replaying from the store's history hold: 16 watchers'
// WatcherBufferBytes; beyond it each replaying watcher gets one event at a
// time, so n of them hold at most this and n events.
const DefaultReplayBudgetBytes = 64 << 20

// ringEntry is an event, when the cache received it, and what it pins.
type ringEntry struct {
	ev   *Event
	at   time.Time
	size int64 // eventBytes(ev)
}

// Cache is the watch cache of one resource.
type Cache struct {
	cfg   Config
	codec *codec // cfg.Codec

	mu lockrank.RWMutex[lockrank.CacheMu]
	// guarded by mu:
	objects   map[string]*Object
	sorted    []*Object // objects in key order; nil when stale
	ring      []ringEntry
	ringStart int64 // the ring holds every event with a revision > ringStart
	ringBytes int64 // the sum of ring's sizes, charged to cfg.Budget
	trimArmed bool  // trimLoop's timer waits for the ring's oldest event
	rev       int64 // the cache reflects the store up to rev
	ready     bool
	fed       map[*Watcher]struct{} // watchers the dispatcher queues events on
	// polled holds the watchers that take events from the ring, by the
	// namespace they watch (the zero handle: all).
	polled  map[unique.Handle[string]]*pollGroup
	npolled int
	fresh   chan struct{} // closed and replaced whenever rev advances, or failed is set
	// failed is why the cache cannot convert a value it must hold (an
	// Unconvertible), since failedAt, until it can: it then serves no list
	// or watch.
	failed   error
	failedAt time.Time

	alt       altAccount    // the ring's events' second encodings, made without mu
	progressc chan struct{} // asks the run loop for a progress check
	trimc     chan struct{} // asks trimLoop to trim
	readyc    chan struct{} // closed once the first list is loaded
	stop      context.CancelFunc
	wg        sync.WaitGroup

	badMu sync.Mutex       // a leaf
	bad   map[string]int64 // guarded by badMu: the revision last reported undecodable, by key
}

// New starts a cache; Close stops it.
func New(cfg Config) *Cache {
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cache{
		cfg: cfg, codec: cfg.Codec.compile(), objects: map[string]*Object{}, bad: map[string]int64{},
		fed: map[*Watcher]struct{}{}, polled: map[unique.Handle[string]]*pollGroup{},
		fresh: make(chan struct{}), progressc: make(chan struct{}, 1), trimc: make(chan struct{}, 1),
		readyc: make(chan struct{}), stop: cancel,
	}
	c.alt.budget = cfg.Budget
	cfg.Budget.add(c)
	c.wg.Go(func() { c.run(ctx) })
	c.wg.Go(func() { c.trimLoop(ctx) })
	return c
}

// Close stops the cache and ends its watchers.
func (c *Cache) Close() {
	c.stop()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.eachWatcher(func(w *Watcher) { w.end(errClosed) })
	c.fed, c.polled, c.npolled = map[*Watcher]struct{}{}, map[unique.Handle[string]]*pollGroup{}, 0
	// A watch started now would never end: Watch and WaitReady fail
	// instead (the run loop, which clears failed, has returned).
	c.failed = errClosed
	close(c.fresh)
	c.fresh = make(chan struct{})
	c.cfg.Observer.Watchers(0)
	c.release(c.ring)
	c.cfg.Budget.remove(c)
	c.ring, c.ringStart = nil, c.rev // its events go now, not when its last watcher does
	c.cfg.Observer.RingBytes(0)
}

var errClosed = errors.New("watch cache closed")

// WaitReady waits until the cache has loaded its first list. It fails at
// once while the cache cannot convert a value (Unconvertible), with that
// error: the cache serves nothing then, rather than objects missing; and
// once the cache is closed.
func (c *Cache) WaitReady(ctx context.Context) error {
	for {
		c.mu.RLock()
		failed, changed := c.failed, c.fresh
		c.mu.RUnlock()
		if failed != nil {
			return failed
		}
		select {
		case <-c.readyc:
			return nil
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Capacity returns the most events the cache's ring holds.
func (c *Cache) Capacity() int { return c.cfg.RingMaxEvents }

// MaxBytes returns the most bytes the cache's ring pins (RingMaxBytes).
func (c *Cache) MaxBytes() int64 { return c.cfg.RingMaxBytes }

// Revision returns the revision the cache reflects.
func (c *Cache) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// run lists, then watches, until ctx ends: a broken watch resumes from the
// cache's revision; only a compacted one makes it list again. A value that
// does not convert (Unconvertible) breaks the watch before it: resuming
// from the same revision tries it again, and after UnconvertibleRelist a
// list does.
func (c *Cache) run(ctx context.Context) {
	relist := true
	backoff := newBackoff()
	for ctx.Err() == nil {
		if relist {
			if err := c.list(ctx); err != nil {
				c.cfg.Logger.Warn("watch cache list failed", "prefix", c.cfg.Prefix, "err", err)
				backoff.wait(ctx)
				continue
			}
		}
		err := c.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		relist = errors.Is(err, storage.ErrCompacted) || c.failedFor() > c.cfg.UnconvertibleRelist
		c.cfg.Logger.Warn("watch cache upstream watch ended", "prefix", c.cfg.Prefix, "err", err, "relist", relist)
		backoff.wait(ctx)
	}
}

// list loads every object under the prefix at one revision and makes the
// ring start there.
func (c *Cache) list(ctx context.Context) error {
	objects := map[string]*Object{}
	opts := storage.ListOptions{Limit: 1000}
	var rev int64
	for {
		page, err := c.cfg.Storage.List(ctx, c.cfg.Prefix, opts)
		if err != nil {
			return fmt.Errorf("listing %s: %w", c.cfg.Prefix, err)
		}
		rev = page.Revision
		for _, kv := range page.KVs {
			o, err := c.object(ctx, kv)
			if err != nil {
				if ctx.Err() == nil { // else the cache stops: nothing failed
					c.fail(err)
				}
				return err
			}
			if o != nil {
				objects[kv.Key] = o
			}
		}
		if page.Continue == "" {
			break
		}
		opts = storage.ListOptions{Limit: 1000, Continue: page.Continue}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = nil
	c.objects, c.sorted = objects, nil
	c.release(c.ring)
	c.ring, c.ringStart = nil, rev
	c.cfg.Observer.RingBytes(0)
	for _, g := range c.polled {
		g.trimmed = rev // the events up to the list were never in the ring
	}
	c.eachWatcher((*Watcher).park) // they catch up from the store's history, or get 410
	c.advance(rev)
	c.cfg.Observer.Applied(0, c.rev, len(c.objects))
	if !c.ready {
		c.ready = true
		close(c.readyc)
	}
	return nil
}

// advance moves the cache's revision to rev (if later) and wakes waiters.
// Called with mu held for writing.
func (c *Cache) advance(rev int64) {
	if rev <= c.rev {
		return
	}
	c.rev = rev
	close(c.fresh)
	c.fresh = make(chan struct{})
}

// watch applies the upstream watch from the cache's revision until it fails.
func (c *Cache) watch(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	from := c.Revision()
	w, err := c.cfg.Storage.Watch(wctx, c.cfg.Prefix, from)
	if err != nil {
		return err
	}
	pw, _ := w.(storage.ProgressWatcher)
	tick := time.NewTicker(c.cfg.ProgressInterval)
	defer tick.Stop()
	for {
		select {
		case batch, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
			if err := c.apply(ctx, batch); err != nil {
				return err
			}
		case <-tick.C:
			if err := c.checkProgress(ctx, w, pw); err != nil {
				return err
			}
		case <-c.progressc:
			if err := c.checkProgress(ctx, w, pw); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkProgress asks the upstream watch how far it has seen the store and,
// once every event up to there is applied, moves the cache's revision there.
// Its error is apply's.
func (c *Cache) checkProgress(ctx context.Context, w storage.Watcher, pw storage.ProgressWatcher) error {
	if pw == nil {
		return nil
	}
	if err := pw.RequestProgress(ctx); err != nil {
		return nil
	}
	p := pw.Progress()
	for {
		select {
		case batch, ok := <-w.Events():
			if !ok {
				return nil
			}
			if err := c.apply(ctx, batch); err != nil {
				return err
			}
			continue
		default:
		}
		break
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p > c.rev {
		c.advance(p)
		c.dispatchProgress()
		c.cfg.Observer.Applied(0, c.rev, len(c.objects))
	}
	return nil
}

// apply turns a batch into events, updates the objects and the ring, and
// dispatches the events to the watchers. A value that does not convert
// (Unconvertible) fails the cache (fail) with the events of the revisions
// before it applied; apply returns its error, and the next watch from the
// cache's revision tries it again.
func (c *Cache) apply(ctx context.Context, batch []storage.Event) error {
	events := make([]*Event, 0, len(batch))
	var failed error
	for _, se := range batch {
		e := &Event{Rev: se.Revision, Key: se.KV.Key}
		if se.Type == storage.EventPut {
			// nil if undecodable: the key goes, as if deleted
			if e.Cur, failed = c.object(ctx, se.KV); failed != nil {
				for len(events) > 0 && events[len(events)-1].Rev == se.Revision {
					events = events[:len(events)-1] // a revision is applied whole or not at all
				}
				break
			}
		}
		events = append(events, e)
	}
	if failed != nil && ctx.Err() != nil {
		return ctx.Err() // the cache stops: nothing failed
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if failed != nil {
		defer c.failLocked(failed) // after the events before it are dispatched
	} else {
		c.failed = nil
	}
	kept := events[:0]
	before := c.ringBytes
	for _, e := range events {
		if e.Rev <= c.rev {
			continue // already reflected (a progress check raced the batch)
		}
		e.Prev = c.objects[e.Key]
		if e.Cur != nil {
			c.objects[e.Key] = e.Cur
		} else {
			delete(c.objects, e.Key)
		}
		if e.Prev == nil || e.Cur == nil {
			c.sorted = nil
		} else if c.sorted != nil {
			c.replaceSorted(e.Cur)
		}
		if e.Prev == nil && e.Cur == nil {
			continue // a delete of something the cache never had
		}
		size := eventBytes(e)
		e.deletedAlt.acct = &c.alt // before any watcher sees it
		if e.Cur != nil {
			e.Cur.Alt.acct = &c.alt
		}
		c.ring = append(c.ring, ringEntry{ev: e, at: now, size: size})
		c.ringBytes += size
		kept = append(kept, e)
	}
	c.cfg.Budget.charge(c.ringBytes - before)
	if len(kept) > 0 {
		c.dispatch(kept)
		c.advance(kept[len(kept)-1].Rev)
	}
	c.cfg.Observer.Dispatched(time.Since(now))
	c.cfg.Observer.Applied(len(batch), c.rev, len(c.objects))
	c.trimRing(now)
	if !c.trimArmed && len(c.ring) > c.cfg.RingMinEvents {
		c.trimArmed = true // an event may now age out with no write to come
		c.askTrim()
	}
	return failed
}

// failedFor is how long the cache has failed (fail), 0 if it has not.
func (c *Cache) failedFor() time.Duration {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.failed == nil {
		return 0
	}
	return time.Since(c.failedAt)
}

// fail stops the cache serving, for err (an Unconvertible), until a list
// or a batch applies whole: its watchers end with err after what they
// have queued (a Status there ends the stream with an ERROR event, so
// that clients list again), and WaitReady fails with it.
func (c *Cache) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err)
}

// failLocked is fail with mu held for writing.
func (c *Cache) failLocked(err error) {
	if c.failed == nil {
		c.failedAt = time.Now()
		c.cfg.Logger.Error("watch cache cannot convert an object: its watchers end, and it retries", "prefix", c.cfg.Prefix, "err", err)
	}
	c.failed = err
	c.eachWatcher(func(w *Watcher) {
		w.park() // fed no more: err is its last item
		w.end(err)
	})
	close(c.fresh)
	c.fresh = make(chan struct{})
}

// maxBadKeys bounds the undecodable keys a cache remembers having
// reported; beyond it they may be reported again.
const maxBadKeys = 1024

// object returns kv's object, or nil when kv cannot be decoded (written by
// an older version, or a bug): that is logged and counted, once per key and
// revision, and the cache serves the key as if it held nothing, so that one
// bad value never stops the cache, its lists or its watchers. A value that
// does not convert is no such value: its error, an Unconvertible, is
// returned.
func (c *Cache) object(ctx context.Context, kv storage.KV) (*Object, error) {
	o, err := c.codec.object(ctx, kv)
	if err == nil {
		return o, nil
	}
	if u := (*Unconvertible)(nil); errors.As(err, &u) {
		return nil, err
	}
	c.badMu.Lock()
	seen := c.bad[kv.Key] == kv.ModRevision
	if !seen && len(c.bad) == maxBadKeys {
		clear(c.bad) // bounded: keys deleted or mended stay otherwise
	}
	c.bad[kv.Key] = kv.ModRevision
	c.badMu.Unlock()
	if !seen {
		c.cfg.Logger.Error("watch cache skips an object it cannot decode", "key", kv.Key, "revision", kv.ModRevision, "err", err)
		c.cfg.Observer.Undecodable()
	}
	return nil, nil
}

// replaceSorted swaps an updated object into the sorted view. mu held.
func (c *Cache) replaceSorted(o *Object) {
	i, found := slices.BinarySearchFunc(c.sorted, o.Key, func(x *Object, k string) int { return cmp.Compare(x.Key, k) })
	if found {
		c.sorted[i] = o
	} else {
		c.sorted = nil
	}
}

// trimRing drops the oldest events beyond the ring's bounds: the count,
// the bytes (RingMaxBytes; its share of cfg.Budget while that is
// exceeded), and the age of those beyond RingMinEvents. mu held.
func (c *Cache) trimRing(now time.Time) {
	drop, evicted := 0, 0
	total, excess := c.ringBytes+c.alt.bytes.Load(), c.cfg.Budget.excess()
	bytes := total // what the events after drop pin
	share := int64(0)
	if excess > 0 {
		share = c.cfg.Budget.share()
	}
	for ; drop < len(c.ring); drop++ {
		n := len(c.ring) - drop
		kept := n <= c.cfg.RingMaxEvents && (n <= c.cfg.RingMinEvents || now.Sub(c.ring[drop].at) < c.cfg.RingMaxAge)
		overBytes := bytes > c.cfg.RingMaxBytes || (excess-(total-bytes) > 0 && bytes > share)
		if kept && !overBytes {
			break
		}
		if kept {
			evicted++ // dropped for bytes alone
		}
		bytes -= c.ring[drop].size + altBytes(c.ring[drop].ev)
	}
	if excess-(total-bytes) > 0 {
		c.cfg.Budget.askOthers(c) // some other ring holds more than its share
	}
	if drop > 0 {
		c.dropRing(drop)
	}
	if evicted > 0 {
		c.cfg.Observer.Evicted(evicted)
	}
	c.cfg.Observer.RingBytes(c.ringBytes + c.alt.bytes.Load())
}

// dropRing drops the ring's oldest n events. mu held.
func (c *Cache) dropRing(n int) {
	if len(c.polled) > 0 {
		for _, r := range c.ring[:n] {
			for _, o := range [2]*Object{r.ev.Cur, r.ev.Prev} {
				if o == nil {
					continue
				}
				if g := c.polled[o.ns]; g != nil { // never the group of all namespaces
					g.trimmed = r.ev.Rev
				}
			}
		}
	}
	c.ringStart = c.ring[n-1].ev.Rev
	c.release(c.ring[:n])
	clear(c.ring[:n])
	c.ring = c.ring[n:]
	if cap(c.ring) > 4*len(c.ring)+1024 {
		c.ring = slices.Clone(c.ring) // let the dropped prefix go
	}
}

// release gives back what entries were charged, as the ring lets them go:
// their sizes, and their second encodings, which are charged no more if
// made later. mu held.
func (c *Cache) release(entries []ringEntry) {
	var n, alt int64
	for _, r := range entries {
		n += r.size
		alt += r.ev.deletedAlt.release()
		if r.ev.Cur != nil {
			alt += r.ev.Cur.Alt.release()
		}
	}
	c.ringBytes -= n
	c.cfg.Budget.charge(-n)
	c.alt.charge(-alt)
}

// requestProgress asks the run loop to check progress soon.
func (c *Cache) requestProgress() {
	select {
	case c.progressc <- struct{}{}:
	default:
	}
}

// WaitFresh waits until the cache reflects the store at least up to rev,
// asking the store for progress while it waits.
func (c *Cache) WaitFresh(ctx context.Context, rev int64) error {
	ask := time.NewTicker(100 * time.Millisecond) // kube asks etcd every 100 ms too
	defer ask.Stop()
	for {
		c.mu.RLock()
		cur, fresh := c.rev, c.fresh
		c.mu.RUnlock()
		if cur >= rev {
			return nil
		}
		c.requestProgress()
		select {
		case <-fresh:
		case <-ask.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// backoff is a capped exponential backoff for the run loop.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 50 * time.Millisecond} }

func (b *backoff) wait(ctx context.Context) {
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	b.d = min(2*b.d, 5*time.Second)
}

// Get returns the object stored under key, nil if none: a map lookup,
// where a List filtered by name scans every object.
func (c *Cache) Get(key string) *Object {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.objects[key]
}

// List returns the objects that pass f, in key order, and the revision the
// cache reflects.
func (c *Cache) List(f Filter) ([]*Object, int64) {
	for {
		c.mu.RLock()
		if sorted := c.sorted; sorted != nil {
			var out []*Object
			for _, o := range sorted {
				if f.matches(o) {
					out = append(out, o)
				}
			}
			rev := c.rev
			c.mu.RUnlock()
			return out, rev
		}
		c.mu.RUnlock()
		c.mu.Lock()
		c.sortedLocked()
		c.mu.Unlock()
	}
}
