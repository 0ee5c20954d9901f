package watchcache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"
	"unique"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/lockrank"
	"github.com/listwatch/listwatch/storage"
)

// WatchOptions say where a watch starts and what it sees.
type WatchOptions struct {
	Filter Filter
	// From is the revision after which events are sent. With
	// InitialEvents, the watch first sends an ADDED event for every
	// matching object and From is ignored.
	From          int64
	InitialEvents bool
	// InitialEventsEnd, with InitialEvents, sends a BOOKMARK annotated
	// k8s.io/initial-events-end after the initial events.
	InitialEventsEnd bool
	// Waker, if set, is called instead of signalling Ready when Pending
	// may have something, for a pool of senders that serves many watchers
	// without a goroutine each. A watcher with a Waker and no label or
	// field selector is polled: the dispatcher does not queue events for
	// it but wakes it after each batch that concerns its namespace
	// (through Config.WakePolled, if set), and its Pending takes them from
	// the ring. One with selectors, which most events may not concern, is
	// fed: the dispatcher tests its filter.
	Waker Waker
	// Lane gives a polled watcher a slot in its group's lane, when the
	// cache has a Config.WakePolled: the caller serves it from there once
	// it has entered (EnterLane).
	Lane bool
}

// Waker serves a watcher (WatchOptions.Waker). The cache calls Wake; the
// caller of Config.WakePolled is handed a batch's Wakers, its own values,
// to serve as it will.
type Waker interface {
	// Wake is told that the watcher's Pending may have something. It may
	// run under the cache's locks (or in ServeLane, for a watcher out of
	// its lane): it must not block or call the cache.
	Wake()
}

// Watcher is one watch on the cache. Its reader calls Next (or, with a
// Waker, Pending when woken); the cache's dispatcher appends to a fed
// watcher's queue without ever blocking, and a polled one takes its events
// from the ring in Pending.
type Watcher struct {
	// What Pending reads comes first, each cache line of it with a field
	// set before the watcher is returned, which Prefetch reads.
	c      *Cache
	waker  Waker         // WatchOptions.Waker, replacing notify
	notify chan struct{} // one pending wake-up for the reader
	polled bool          // set before the watcher is returned: see WatchOptions.Waker
	// slot is its lane slot (WatchOptions.Lane), set at registration and
	// cleared by Stop (both under c.mu), so that a stopped watcher never
	// reaches the slot's next watcher.
	slot atomic.Pointer[LaneSlot]

	mu lockrank.Mutex[lockrank.WatcherMu] // taken after c.mu when both are held
	// guarded by mu:
	parked bool // neither fed nor polling: the reader catches up itself
	behind bool // parked by the dispatcher for a full queue, not yet level
	queue  []Item
	queued int   // bytes of Object in queue
	pos    int64 // every matching event up to pos is queued or delivered
	err    error // set once: the stream ends after the queue
	// replayed is the bytes of queue's items replayed from the store (the
	// watcher's own copies), and lent those of such items the last
	// Pending returned, which its reader holds until it calls again:
	// both charged to the cache's Budget.
	replayed, lent int64

	// set before the watcher is returned, never changed (not guarded by
	// mu):
	budget int // bytes of queued objects allowed before parking
	filter Filter
}

func (w *Watcher) lock()   { w.mu.Lock() }
func (w *Watcher) unlock() { w.mu.Unlock() }

// Watch starts a watcher. It waits for the cache's first list.
func (c *Cache) Watch(ctx context.Context, opts WatchOptions) (*Watcher, error) {
	if err := c.WaitReady(ctx); err != nil {
		return nil, err
	}
	w := &Watcher{c: c, filter: opts.Filter.interned(), budget: c.cfg.WatcherBufferBytes, waker: opts.Waker}
	laned := opts.Lane && c.cfg.WakePolled != nil
	if w.waker == nil {
		w.notify = make(chan struct{}, 1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != nil { // since WaitReady
		return nil, c.failed
	}
	if opts.InitialEvents {
		for _, o := range c.sortedLocked() {
			if w.filter.matches(o) {
				w.queue = append(w.queue, Item{Type: api.Added, Rev: o.Rev, Object: o.JSON, Alt: &o.Alt})
			}
		}
		w.pos = c.rev
		if opts.InitialEventsEnd {
			w.queue = append(w.queue, Item{Type: api.Bookmark, Rev: c.rev, InitialEventsEnd: true})
		}
	} else {
		w.pos = opts.From
		w.parked = true // it catches up from the ring (or the store) first
	}
	c.register(w, laned)
	w.wake()
	return w, nil
}

// sortedLocked returns the objects in key order. mu held (the sorted view
// is rebuilt under the read lock only by writers, so callers hold it for
// writing or accept a fresh slice).
func (c *Cache) sortedLocked() []*Object {
	if c.sorted == nil {
		s := make([]*Object, 0, len(c.objects))
		for _, o := range c.objects {
			s = append(s, o)
		}
		slices.SortFunc(s, func(a, b *Object) int { return cmp.Compare(a.Key, b.Key) })
		c.sorted = s
	}
	return c.sorted
}

// pollGroup is the polled watchers of one namespace, or of all.
type pollGroup struct {
	filter   Filter // of its namespace
	watchers map[*Watcher]struct{}
	wakers   []Waker // those of the watchers without a lane slot; nil when stale
	lane     lane    // the slots of the others
	woken    int64   // the revision of the last batch that woke them
	// trimmed bounds the events of the group's namespace that the ring
	// has dropped (or never held: before a list) since the group began:
	// none is after it. A watcher of the namespace at a position the ring
	// no longer holds still finds every event it sees in the ring if its
	// position is not before trimmed: batches of other namespaces do not
	// wake it, so its position may lag far behind the ring's start.
	trimmed int64
}

// register adds w to the watchers, with a lane slot if laned and polled.
// mu held for writing.
func (c *Cache) register(w *Watcher, laned bool) {
	w.polled = w.waker != nil && w.filter.Labels.Empty() && w.filter.Fields.Empty()
	if !w.polled {
		c.fed[w] = struct{}{}
	} else {
		g := c.polled[w.filter.ns]
		if g == nil {
			g = &pollGroup{filter: Filter{Namespace: w.filter.Namespace}.interned(), watchers: map[*Watcher]struct{}{}, trimmed: c.ringStart}
			c.polled[w.filter.ns] = g
		}
		g.watchers[w] = struct{}{}
		if laned {
			w.slot.Store(g.lane.take(w))
		} else {
			g.wakers = nil
		}
		c.npolled++
	}
	c.cfg.Observer.Watchers(len(c.fed) + c.npolled)
}

// Stop ends the watcher and releases it.
func (w *Watcher) Stop() {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.polled[w.filter.ns]; w.polled && g != nil {
		if _, ok := g.watchers[w]; ok {
			delete(g.watchers, w)
			if s := w.slot.Swap(nil); s != nil {
				g.lane.give(s)
			} else {
				g.wakers = nil
			}
			c.npolled--
		}
		if len(g.watchers) == 0 {
			delete(c.polled, w.filter.ns)
		}
	}
	delete(c.fed, w)
	c.cfg.Observer.Watchers(len(c.fed) + c.npolled)
	w.lock()
	c.cfg.Budget.chargeReplay(-w.replayed - w.lent)
	w.replayed, w.lent = 0, 0
	w.unlock()
}

// lend accounts for the queue's replayed items going to the reader, and
// for those it had before, which it is done with. w locked.
func (w *Watcher) lend() {
	w.c.cfg.Budget.chargeReplay(-w.lent)
	w.lent, w.replayed = w.replayed, 0
}

// eachWatcher calls f for every watcher, fed or polled. mu held.
func (c *Cache) eachWatcher(f func(*Watcher)) {
	for w := range c.fed {
		f(w)
	}
	for _, g := range c.polled {
		for w := range g.watchers {
			f(w)
		}
	}
}

func (w *Watcher) wake() {
	if w.waker != nil {
		w.waker.Wake()
		return
	}
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// park stops dispatches to w; its reader catches up. c.mu held for writing.
func (w *Watcher) park() {
	w.LeaveLane() // or its holder hands it over, after sends of earlier batches
	w.lock()
	w.parked = true
	w.unlock()
	w.wake()
}

// end makes the stream end after what is queued.
func (w *Watcher) end(err error) {
	w.LeaveLane()
	w.lock()
	if w.err == nil {
		w.err = err
	}
	w.unlock()
	w.wake()
}

// dispatch queues events, in order, on every watcher fed by the
// dispatcher: one turn of each watcher's lock and at most one wake-up per
// batch; then it wakes the polled watchers, which take the events from the
// ring themselves. c.mu held for writing.
func (c *Cache) dispatch(events []*Event) {
	c.feed(events)
	c.wakePolled(events)
}

// feed queues events on the fed watchers that are not parked. c.mu held
// for writing.
func (c *Cache) feed(events []*Event) {
	for w := range c.fed {
		w.lock()
		woken := false // a watcher the events do not concern is not woken
		for _, e := range events {
			if w.parked || e.Rev <= w.pos {
				continue
			}
			it, ok := w.filter.itemFor(e)
			if !ok {
				w.pos = e.Rev
				continue
			}
			woken = true
			if w.queued+len(it.Object) > w.budget {
				w.parked, w.behind = true, true // the reader replays from the ring from pos
				c.cfg.Observer.Parked()
				break
			}
			w.queue = append(w.queue, it)
			w.queued += len(it.Object)
			w.pos = e.Rev
		}
		w.unlock()
		if woken {
			w.wake()
		}
	}
}

// wakePolled wakes the polled watchers of every namespace of events, and
// those of all namespaces: the ring has events they may not have taken.
// c.mu held for writing.
func (c *Cache) wakePolled(events []*Event) {
	if len(c.polled) == 0 {
		return
	}
	c.wakeGroup(c.polled[unique.Handle[string]{}], events)
	for _, e := range events {
		for _, o := range [2]*Object{e.Cur, e.Prev} {
			if o != nil {
				c.wakeGroup(c.polled[o.ns], events)
			}
		}
	}
}

// wakeGroup wakes g's watchers (g may be nil) for the batch of events,
// unless it has already woken them for it, at once through
// Config.WakePolled if set. c.mu held for writing.
func (c *Cache) wakeGroup(g *pollGroup, events []*Event) {
	rev := events[len(events)-1].Rev
	if g == nil || g.woken == rev {
		return
	}
	prev := g.woken
	g.woken = rev
	if g.wakers == nil {
		g.wakers = make([]Waker, 0, len(g.watchers))
		for w := range g.watchers {
			if w.slot.Load() == nil {
				g.wakers = append(g.wakers, w.waker)
			}
		}
	}
	if c.cfg.WakePolled == nil {
		for _, wk := range g.wakers {
			wk.Wake()
		}
		return
	}
	b := &PollBatch{Wakers: g.wakers}
	if len(g.lane.blocks) == 0 {
		c.cfg.WakePolled(b)
		return
	}
	for _, e := range events {
		if it, ok := g.filter.itemFor(e); ok {
			b.Items = append(b.Items, it)
		}
	}
	b.Lane, b.Prev, b.Rev = g.lane.blocks, prev, rev
	c.cfg.WakePolled(b)
	if g.lane.last != nil {
		g.lane.last.next.Store(b) // for a sender behind to chain to
	}
	g.lane.last = b
}

// dispatchProgress moves every fed watcher to the cache's revision (a
// polled one moves when it next takes from the ring). c.mu held for
// writing.
func (c *Cache) dispatchProgress() {
	for w := range c.fed {
		w.lock()
		if !w.parked && c.rev > w.pos {
			w.pos = c.rev
		}
		w.unlock()
	}
}

// Next waits for items and returns all that are pending (appended to buf),
// or the error that ends the stream.
func (w *Watcher) Next(ctx context.Context, buf []Item) ([]Item, error) {
	for {
		n := len(buf)
		buf, err := w.Pending(ctx, buf)
		if err != nil || len(buf) > n {
			return buf, err
		}
		select {
		case <-w.Ready():
		case <-ctx.Done():
			return buf, ctx.Err()
		}
	}
}

// Ready returns a channel that receives when Pending may have something.
func (w *Watcher) Ready() <-chan struct{} { return w.notify }

// Pending returns every pending item (appended to buf) without waiting, or
// the error that ends the stream. A polled watcher takes its events from
// the ring here; a parked watcher catches up here, in the reader's
// goroutine, a bounded step at a time (CatchingUp says when that may read
// the store).
func (w *Watcher) Pending(ctx context.Context, buf []Item) ([]Item, error) {
	if w.polled {
		var r pollResult
		if buf, r = w.poll(buf); r != pollSkipped {
			if r != pollLevel {
				w.wake() // to take the rest, or to catch up where it may wait
			}
			return buf, nil
		}
	}
	w.lock()
	w.lend()
	if len(w.queue) > 0 {
		buf = append(buf, w.queue...)
		clear(w.queue)
		w.queue, w.queued = w.queue[:0], 0
		left := w.parked || w.err != nil // its catch-up, or its error, is for the next Pending
		w.unlock()
		if left {
			w.wake() // a server's watch goes idle after a send unless woken
		}
		return buf, nil
	}
	err, parked := w.err, w.parked
	w.unlock()
	if err != nil {
		return buf, err
	}
	if parked {
		if err := w.catchUp(ctx); err != nil {
			w.end(err)
		}
		w.wake() // more to take, or the error to report
	}
	return buf, nil
}

// CatchingUp reports whether the watcher is parked: its next Pending
// catches up from the ring or, slower, from the store's history.
func (w *Watcher) CatchingUp() bool {
	w.lock()
	defer w.unlock()
	return w.parked
}

// Bookmark returns the revision a BOOKMARK may carry now: one no lower than
// anything delivered, if the watcher is level with the cache.
func (w *Watcher) Bookmark() (int64, bool) {
	w.lock()
	defer w.unlock()
	if w.parked || len(w.queue) > 0 || w.err != nil {
		return 0, false
	}
	return w.pos, true
}

// catchUp queues the events after pos from the ring, or from the store's
// history when the ring no longer holds them, and unparks the watcher once
// it is level with the cache.
func (w *Watcher) catchUp(ctx context.Context) error {
	c := w.c
	c.mu.RLock()
	if w.pos < c.ringStart {
		start := c.ringStart
		c.mu.RUnlock()
		return w.replayStore(ctx, start)
	}
	defer c.mu.RUnlock()
	w.lock()
	defer w.unlock()
	if w.fromRing() {
		w.parked = false // level with the cache: the dispatcher feeds it now (or it polls)
		if w.behind {
			w.behind = false
			c.cfg.Observer.CaughtUp()
		}
	}
	return nil
}

// pollResult is what a poll did.
type pollResult uint8

const (
	pollSkipped pollResult = iota // parked or ended before: Pending's general path serves it
	pollLevel                     // took everything up to the cache's revision
	pollMore                      // took its budget's worth: the ring holds more for it
	pollParked                    // parked now: the ring no longer holds its position
)

// poll appends to buf a polled watcher's queue (its initial events, say)
// and its events from the ring after it, up to its budget, in one turn of
// its lock, unless it has an error or is parked. Even a queue over budget
// polls: a wake that found the watch waiting to be served queued nothing,
// so this is the events' only notice. One whose position the ring no
// longer holds is parked instead, its queue kept, unless the ring dropped
// no event of its namespace after it (pollGroup.trimmed): it catches up
// from the store's history, which may wait.
func (w *Watcher) poll(buf []Item) ([]Item, pollResult) {
	c := w.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	w.lock()
	defer w.unlock()
	if w.parked || w.err != nil {
		return buf, pollSkipped
	}
	w.lend()
	if w.pos < c.ringStart {
		if g := c.polled[w.filter.ns]; w.filter.Namespace == "" || g == nil || g.trimmed > w.pos {
			w.parked, w.behind = true, true
			c.cfg.Observer.Parked()
			return buf, pollParked
		}
		w.pos = c.ringStart // the ring dropped nothing it sees after pos
	}
	// The ring's events are offered after the queue's, into buf's array:
	// a polled watcher keeps no queue array of its own.
	queued := w.queue
	w.queue = append(buf, queued...)
	clear(queued)
	level := w.fromRing()
	buf, w.queue, w.queued = w.queue, nil, 0
	if !level {
		return buf, pollMore
	}
	return buf, pollLevel
}

// Prefetch reads a field of each cache line of what Pending reads first,
// and returns a value of no use but to keep the reads: a caller about to
// serve many watchers may bring their memory in together rather than each
// on its turn. Any goroutine may call it.
func (w *Watcher) Prefetch() int64 {
	n := int64(w.budget)
	if w.polled && w.filter.ns != (unique.Handle[string]{}) {
		n++
	}
	return n
}

// fromRing queues the ring's events after pos, up to the budget, and
// reports whether it reached the ring's end (pos is then the cache's
// revision). c.mu held for reading, w locked, pos >= c.ringStart.
func (w *Watcher) fromRing() bool {
	c := w.c
	i, _ := slices.BinarySearchFunc(c.ring, w.pos+1, func(r ringEntry, rev int64) int { return cmp.Compare(r.ev.Rev, rev) })
	for ; i < len(c.ring) && w.queued < w.budget; i++ {
		w.offer(c.ring[i].ev)
	}
	if i < len(c.ring) {
		return false
	}
	w.pos = max(w.pos, c.rev)
	return true
}

// offer queues e if the filter sees it. w locked.
func (w *Watcher) offer(e *Event) {
	if it, ok := w.filter.itemFor(e); ok {
		w.queue = append(w.queue, it)
		w.queued += len(it.Object)
	}
	w.pos = e.Rev
}

// replayStore queues the events after pos from the store's history up to
// the ring's start (or the watcher's budget), since the ring no longer
// holds them. A position the store no longer holds is 410 Gone. The
// store's watch says how far it has read (storage.ProgressWatcher): the
// replay ends there too, for a history without events of the prefix up to
// the ring's start sends none.
func (w *Watcher) replayStore(ctx context.Context, until int64) error {
	c := w.c
	end, err := c.cfg.Budget.startReplay(ctx)
	if err != nil {
		return err
	}
	defer end()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sw, err := c.cfg.Storage.Watch(wctx, c.cfg.Prefix, w.pos)
	if err != nil {
		return replayError(err, w.pos)
	}
	pw, _ := sw.(storage.ProgressWatcher)
	tick := time.NewTicker(replayProgressInterval)
	defer tick.Stop()
	for w.pos < until && !w.full() {
		select {
		case batch, ok := <-sw.Events():
			if cut, err := w.replayReceived(ctx, sw, batch, ok); cut || err != nil {
				return err
			}
		case <-tick.C:
			if err := w.replayProgress(ctx, sw, pw, until); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// replayProgressInterval is how often a replay asks the store's watch how
// far it has read.
const replayProgressInterval = 10 * time.Millisecond

// replayProgress moves pos up to the store watch's progress (at most
// until), once every event up to there is queued. A queue that reaches
// its budget first stops the replay where it is, as replayStore's loop
// does: the events still sent are read again at the next catch-up.
func (w *Watcher) replayProgress(ctx context.Context, sw storage.Watcher, pw storage.ProgressWatcher, until int64) error {
	if pw == nil {
		return nil
	}
	if err := pw.RequestProgress(ctx); err != nil {
		return nil // best effort: asked again at the next tick
	}
	p := pw.Progress()
	for { // every event up to p has been sent: take them
		if w.full() {
			return nil // pos stays before the events not taken
		}
		select {
		case batch, ok := <-sw.Events():
			if cut, err := w.replayReceived(ctx, sw, batch, ok); cut || err != nil {
				return err // a cut batch leaves pos before its rest
			}
			continue
		default:
		}
		break
	}
	w.lock()
	defer w.unlock()
	w.pos = max(w.pos, min(p, until))
	return nil
}

// replayReceived queues a batch received from the store's watch sw (ok
// false: its end, an error), and says whether the queue filled before its
// end (replayBatch).
func (w *Watcher) replayReceived(ctx context.Context, sw storage.Watcher, batch []storage.Event, ok bool) (cut bool, err error) {
	if !ok {
		return false, replayError(sw.Err(), w.pos)
	}
	return w.replayBatch(ctx, batch)
}

// full reports whether the watcher's queue has used its budget, or holds
// something while replays hold the whole of the shared Budget's bound.
func (w *Watcher) full() bool {
	w.lock()
	defer w.unlock()
	return w.fullLocked()
}

func (w *Watcher) fullLocked() bool {
	return w.queued >= w.budget || w.queued > 0 && w.c.cfg.Budget.replaysFull()
}

// replayBatch turns stored events into queued items until the queue is
// full, at a revision's end, and says whether it was cut there. A cut
// replay must end at once: pos stays before the rest of the batch, which
// only the next catch-up reads again; the store's next batch, or its
// progress, would move pos past them (the shared bound may have room again
// by then). A value that does not convert ends the replay with its error
// (an Unconvertible), as it ends the cache's watchers.
func (w *Watcher) replayBatch(ctx context.Context, batch []storage.Event) (cut bool, err error) {
	for _, se := range batch {
		if se.Revision != w.pos && w.full() {
			return true, nil
		}
		// Decoded with w unlocked: the dispatcher takes its lock under the
		// cache's, and a conversion webhook's call must hold up neither.
		// An undecodable value is no object, as in Cache.apply.
		e := &Event{Rev: se.Revision, Key: se.KV.Key}
		if se.PrevKV != nil {
			if e.Prev, err = w.c.object(ctx, *se.PrevKV); err != nil {
				return false, err
			}
		}
		if se.Type == storage.EventPut {
			if e.Cur, err = w.c.object(ctx, se.KV); err != nil {
				return false, err
			}
		}
		w.lock()
		if e.Prev == nil && e.Cur == nil {
			w.pos = e.Rev // nothing to send, but past it
		} else {
			queued := w.queued
			w.offer(e)
			w.replayed += int64(w.queued - queued)
			w.c.cfg.Budget.chargeReplay(int64(w.queued - queued))
		}
		w.unlock()
	}
	return false, nil
}

func replayError(err error, pos int64) error {
	if errors.Is(err, storage.ErrCompacted) {
		s := api.NewStatus(http.StatusGone, api.StatusReasonExpired, fmt.Sprintf("too old resource version: %d", pos))
		return &api.StatusError{Status: s}
	}
	return fmt.Errorf("replaying from the store at %d: %w", pos, err)
}
