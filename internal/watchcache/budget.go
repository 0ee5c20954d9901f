package watchcache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Budget bounds the bytes that the rings of several caches pin together
// (Config.Budget): the server shares one among every resource's cache,
// those of CustomResourceDefinitions made and closed at run time included.
// A cache charges it for each event it keeps and gives the bytes back as it
// drops them, or all at once when it closes or relists.
//
// It also bounds the objects their watchers replay from the store's
// history: each replaying watcher decodes copies of its own, which its
// reader holds until its next Pending (or Stop), however long its client
// takes to read them; past the bound a replay takes one event at a time.
// And it lets replaySlots replays read the store at once, for each holds
// what the store's watch reads ahead (storage/bolt: a few chunks of its
// history, of a MiB each).
type Budget struct {
	max    int64
	used   atomic.Int64
	ncache atomic.Int64 // len(caches), read without mu

	replayMax int64
	replayed  atomic.Int64
	slots     chan struct{} // a token per replay reading the store

	mu sync.Mutex // a leaf: taken under Cache.mu
	// guarded by mu:
	caches map[*Cache]struct{}
}

// NewBudget returns a budget of rings bytes for the caches' rings and of
// replays bytes for the objects their watchers replay from the store.
func NewBudget(rings, replays int64) *Budget {
	return &Budget{max: rings, replayMax: replays, slots: make(chan struct{}, replaySlots), caches: map[*Cache]struct{}{}}
}

// replaySlots is how many replays may read the store at once: the
// catch-up of parked watchers goes at the store's pace either way, on
// two cores or twenty.
const replaySlots = 4

// startReplay waits until a replay may read the store; the replay calls
// end when done.
func (b *Budget) startReplay(ctx context.Context) (end func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	select {
	case b.slots <- struct{}{}:
		return func() { <-b.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Max returns the bytes the rings may pin.
func (b *Budget) Max() int64 { return b.max }

// Used returns the bytes its caches' rings pin.
func (b *Budget) Used() int64 { return b.used.Load() }

// MaxReplayed returns the bytes replaying watchers may hold.
func (b *Budget) MaxReplayed() int64 { return b.replayMax }

// Replayed returns the bytes of objects replayed from the store that
// watchers and their readers hold.
func (b *Budget) Replayed() int64 { return b.replayed.Load() }

func (b *Budget) chargeReplay(n int64) {
	if b != nil && n != 0 {
		b.replayed.Add(n)
	}
}

// replaysFull reports whether replays hold the whole of their bound.
func (b *Budget) replaysFull() bool { return b != nil && b.replayed.Load() >= b.replayMax }

// add registers c.
func (b *Budget) add(c *Cache) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.caches[c] = struct{}{}
	b.ncache.Store(int64(len(b.caches)))
}

// remove forgets c, whose ring has given its bytes back.
func (b *Budget) remove(c *Cache) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.caches, c)
	b.ncache.Store(int64(len(b.caches)))
}

func (b *Budget) charge(n int64) {
	if b != nil && n != 0 {
		b.used.Add(n)
	}
}

// excess returns the bytes used beyond the budget (<= 0: within it).
func (b *Budget) excess() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load() - b.max
}

// share is what a cache may keep while the caches are over the budget:
// an equal part, so that the busiest rings give way first and a resource
// with little history keeps it.
func (b *Budget) share() int64 { return b.max / max(b.ncache.Load(), 1) }

// askOthers asks every cache but c to trim: c is within its share and the
// caches are still over the budget, so some other holds more than its
// share, whether or not writes come to it.
func (b *Budget) askOthers(c *Cache) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for o := range b.caches {
		if o != c {
			o.askTrim()
		}
	}
}

// altAccount counts the bytes of the second encodings made for a cache's
// ring's events (Object.Alt, Event.deletedAlt), after they entered the
// ring, by whichever watcher first needed one; they are charged to the
// Budget too.
type altAccount struct {
	bytes  atomic.Int64
	budget *Budget
}

func (a *altAccount) charge(n int64) {
	a.bytes.Add(n)
	a.budget.charge(n)
}

// altBytes is what e's second encodings are charged for now.
func altBytes(e *Event) int64 {
	n := e.deletedAlt.charged()
	if e.Cur != nil {
		n += e.Cur.Alt.charged()
	}
	return n
}

// What an event pins beyond its objects' JSON, set a little above what
// was measured (heap per event in a ring of 50,000 ConfigMap creates: 645
// bytes for 115 of JSON; 997 for 156 with two labels).
const (
	eventOverhead  = 256 // the Event and its ring entry
	objectOverhead = 256 // an Object beyond its JSON
	attrOverhead   = 96  // each label and selectable field, in its map
)

// eventBytes is what e pins while the ring holds it, beyond its second
// encodings (altBytes): its object, and the previous one, which the event
// keeps alive once the object map has moved on (counted again when it is
// also an earlier event's object, so that the bound errs high); a DELETED
// event's content is the previous object's JSON again, at the event's
// revision, made on demand.
func eventBytes(e *Event) int64 {
	n := eventOverhead + objectBytes(e.Cur) + objectBytes(e.Prev)
	if e.Cur == nil {
		n += len(e.Prev.JSON)
	}
	return int64(n)
}

// objectBytes is what o pins (none for nil).
func objectBytes(o *Object) int {
	if o == nil {
		return 0
	}
	return objectOverhead + len(o.JSON) + attrOverhead*(len(o.labels)+len(o.fields))
}

// askTrim asks the trim loop to trim now.
func (c *Cache) askTrim() {
	select {
	case c.trimc <- struct{}{}:
	default:
	}
}

// trimLoop trims the ring when its oldest event outlives RingMaxAge, with
// no write needed, and when the budget asks: an idle resource's events
// are let go on time. It sleeps while nothing in the ring can age out
// (apply asks it again then).
func (c *Cache) trimLoop(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.trimc:
		case <-ctx.Done():
			t.Stop()
			return
		}
		c.mu.Lock()
		now := time.Now()
		c.trimRing(now)
		next, armed := c.nextExpiry()
		c.trimArmed = armed
		c.mu.Unlock()
		if armed {
			t.Reset(next.Sub(now))
		} else {
			t.Stop()
		}
	}
}

// nextExpiry returns when the ring's oldest event may be dropped for its
// age, if any may. mu held.
func (c *Cache) nextExpiry() (time.Time, bool) {
	if len(c.ring) <= c.cfg.RingMinEvents {
		return time.Time{}, false
	}
	return c.ring[0].at.Add(c.cfg.RingMaxAge), true
}
