package cache

import (
	"context"
	"slices"
	"sync"
	"time"
)

// DefaultHandlerBufferSize is how many notifications a handler may have
// queued, in order, before the ones after them are coalesced per key
// (client-go's listener ring starts at 1024 and grows without bound).
const DefaultHandlerBufferSize = 1024

type notifyKind uint8

const (
	notifyAdd notifyKind = iota
	notifyUpdate
	notifyDelete
	// notifySynced marks the end of the handler's initial list.
	notifySynced
)

// notification is one call to make on a handler.
type notification[T any] struct {
	kind notifyKind
	key  string
	old  T // notifyUpdate
	obj  T
	// flag is isInInitialList for notifyAdd, finalStateUnknown for notifyDelete.
	flag bool
}

// coalesced is what a handler that fell behind is owed for one key: the
// notifications received for it since, merged.
type coalesced[T any] struct {
	seen   bool // the handler already has the object, as old
	old    T
	exists bool // the object exists now, as cur
	cur    T
	flag   bool // isInInitialList of the add, or finalStateUnknown of the delete
}

func newCoalesced[T any](n notification[T]) *coalesced[T] {
	c := &coalesced[T]{seen: n.kind != notifyAdd, old: n.old}
	if n.kind == notifyDelete {
		c.old = n.obj
	}
	c.merge(n)
	return c
}

// merge folds a later notification for the same key into c.
func (c *coalesced[T]) merge(n notification[T]) {
	switch n.kind {
	case notifyAdd:
		if !c.seen {
			c.flag = n.flag
		}
		c.exists, c.cur = true, n.obj
	case notifyUpdate:
		c.exists, c.cur = true, n.obj
	case notifyDelete:
		c.exists, c.cur, c.flag = false, n.obj, n.flag
	}
}

// notification turns c into the one call that takes the handler from what
// it has to what is; ok is false if there is nothing to say (an object
// added and deleted while the handler was behind).
func (c *coalesced[T]) notification(key string) (n notification[T], ok bool) {
	switch {
	case c.seen && c.exists:
		return notification[T]{kind: notifyUpdate, key: key, old: c.old, obj: c.cur}, true
	case c.seen:
		return notification[T]{kind: notifyDelete, key: key, obj: c.cur, flag: c.flag}, true
	case c.exists:
		return notification[T]{kind: notifyAdd, key: key, obj: c.cur, flag: c.flag}, true
	}
	return n, false
}

// listener buffers one handler's notifications and calls it from its own
// goroutine, so that a slow handler delays nobody else.
//
// Buffer policy: up to capacity notifications wait in order (a ring). When
// the ring is full, later notifications are coalesced per key (and
// delivered after the ring, in order of their keys' first arrival) until
// the handler has caught up: the handler sees every key's latest state, but
// intermediate states of a key, and the order between keys, are lost while
// it is behind, as after a relist. Memory is bounded by capacity plus the
// number of distinct keys changed meanwhile, never by the event rate; an
// object created and deleted while the handler was behind is not reported,
// and a deleted and recreated one is reported as an update.
type listener[T any] struct {
	handler  ResourceEventHandlerWithContext[T]
	capacity int
	wake     chan struct{} // buffered 1: something was pushed
	synced   chan struct{} // closed when the handler has had its initial list
	cancel   context.CancelFunc

	// guarded by the processor's mu
	resyncPeriod time.Duration
	nextResync   time.Time

	mu         sync.Mutex
	ring       []notification[T]        // guarded by mu; circular, len grows to capacity
	head, n    int                      // guarded by mu
	over       map[string]*coalesced[T] // guarded by mu
	order      []string                 // guarded by mu; keys of over, oldest first
	syncLater  bool                     // guarded by mu; the synced marker waits behind over
	overflowed uint64                   // guarded by mu; notifications coalesced
}

func newListener[T any](h ResourceEventHandler[T], resync time.Duration, capacity int) *listener[T] {
	return &listener[T]{
		handler:      withContext(h),
		capacity:     capacity,
		wake:         make(chan struct{}, 1),
		synced:       make(chan struct{}),
		resyncPeriod: resync,
		over:         map[string]*coalesced[T]{},
	}
}

// push queues n without waiting.
func (l *listener[T]) push(n notification[T]) {
	l.mu.Lock()
	switch {
	case len(l.over) == 0 && l.n < l.capacity:
		l.pushRing(n)
	case n.kind == notifySynced:
		l.syncLater = true
	default:
		l.coalesce(n)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *listener[T]) pushRing(n notification[T]) {
	if l.n == len(l.ring) {
		grown := make([]notification[T], min(max(16, 2*len(l.ring)), l.capacity))
		for i := range l.n {
			grown[i] = l.ring[(l.head+i)%len(l.ring)]
		}
		l.ring, l.head = grown, 0
	}
	l.ring[(l.head+l.n)%len(l.ring)] = n
	l.n++
}

func (l *listener[T]) coalesce(n notification[T]) {
	l.overflowed++
	if c, ok := l.over[n.key]; ok {
		c.merge(n)
		return
	}
	l.over[n.key] = newCoalesced(n)
	l.order = append(l.order, n.key)
}

// next returns the next notification to deliver, if any.
func (l *listener[T]) next() (n notification[T], ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n > 0 {
		n, l.ring[l.head] = l.ring[l.head], notification[T]{}
		l.head = (l.head + 1) % len(l.ring)
		l.n--
		return n, true
	}
	for len(l.order) > 0 {
		key := l.order[0]
		l.order = l.order[1:]
		c := l.over[key]
		delete(l.over, key)
		if n, ok := c.notification(key); ok {
			return n, true
		}
	}
	l.order = nil
	if l.syncLater {
		l.syncLater = false
		return notification[T]{kind: notifySynced}, true
	}
	return n, false
}

// pending returns how many notifications wait for the handler.
func (l *listener[T]) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n + len(l.over)
}

func (l *listener[T]) coalescedCount() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.overflowed
}

// run calls the handler until ctx ends.
func (l *listener[T]) run(ctx context.Context) {
	for ctx.Err() == nil { // a removed handler is called no more
		n, ok := l.next()
		if !ok {
			select {
			case <-l.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		l.deliver(ctx, n)
	}
}

func (l *listener[T]) deliver(ctx context.Context, n notification[T]) {
	switch n.kind {
	case notifyAdd:
		l.handler.OnAddWithContext(ctx, n.obj, n.flag)
	case notifyUpdate:
		l.handler.OnUpdateWithContext(ctx, n.old, n.obj)
	case notifyDelete:
		l.handler.OnDeleteWithContext(ctx, n.obj, n.flag)
	case notifySynced:
		close(l.synced)
	}
}

// processor fans notifications out to the listeners and keeps their
// resync schedule.
type processor[T any] struct {
	changed chan struct{} // buffered 1: the resync schedule changed

	mu        sync.RWMutex
	listeners []*listener[T]            // guarded by mu; a slice, cheaper to range over per notification than a map
	syncing   map[*listener[T]]struct{} // guarded by mu; due at the last resync
}

func newProcessor[T any]() *processor[T] {
	return &processor[T]{changed: make(chan struct{}, 1)}
}

func (p *processor[T]) add(l *listener[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.resyncPeriod > 0 {
		l.nextResync = time.Now().Add(l.resyncPeriod)
	}
	p.listeners = append(p.listeners, l)
	p.scheduleChanged()
}

// remove reports whether l was there.
func (p *processor[T]) remove(l *listener[T]) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.listeners, l)
	if i >= 0 {
		p.listeners = slices.Delete(p.listeners, i, i+1)
	}
	delete(p.syncing, l)
	p.scheduleChanged()
	return i >= 0
}

func (p *processor[T]) scheduleChanged() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// distribute gives n to every listener, or, for a resync, to those due.
func (p *processor[T]) distribute(n notification[T], isSync bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, l := range p.listeners {
		if isSync {
			if _, due := p.syncing[l]; !due {
				continue
			}
		}
		l.push(n)
	}
}

// nextResync returns when the next listener's resync is due.
func (p *processor[T]) nextResync() (at time.Time, ok bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, l := range p.listeners {
		if l.resyncPeriod > 0 && (!ok || l.nextResync.Before(at)) {
			at, ok = l.nextResync, true
		}
	}
	return at, ok
}

// shouldResync marks the listeners due at now as syncing, schedules their
// next resync, and reports whether there are any.
func (p *processor[T]) shouldResync(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncing = map[*listener[T]]struct{}{}
	for _, l := range p.listeners {
		if l.resyncPeriod > 0 && !now.Before(l.nextResync) {
			p.syncing[l] = struct{}{}
			l.nextResync = now.Add(l.resyncPeriod)
		}
	}
	return len(p.syncing) > 0
}
