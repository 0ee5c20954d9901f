package watchcache

import (
	"sync"
	"time"
)

// observed is what a cache told its Observer.
type observed struct {
	received, parked, caughtUp int
	undecodable, evicted       int
	rev, ringBytes             int64
	objects, watchers          int
}

// countingObserver records what a cache tells its Observer.
type countingObserver struct {
	mu sync.Mutex
	o  observed // guarded by mu
}

func (c *countingObserver) Applied(events int, rev int64, objects int) {
	c.update(func(o *observed) { o.received, o.rev, o.objects = o.received+events, rev, objects })
}

func (c *countingObserver) Dispatched(time.Duration) {}

func (c *countingObserver) Watchers(n int)    { c.update(func(o *observed) { o.watchers = n }) }
func (c *countingObserver) Parked()           { c.update(func(o *observed) { o.parked++ }) }
func (c *countingObserver) CaughtUp()         { c.update(func(o *observed) { o.caughtUp++ }) }
func (c *countingObserver) Undecodable()      { c.update(func(o *observed) { o.undecodable++ }) }
func (c *countingObserver) RingBytes(n int64) { c.update(func(o *observed) { o.ringBytes = n }) }
func (c *countingObserver) Evicted(n int)     { c.update(func(o *observed) { o.evicted += n }) }

func (c *countingObserver) update(f func(*observed)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.o)
}

func (c *countingObserver) snapshot() observed {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.o
}
