package watchcache

import "time"

// Observer is told what a Cache does, for metrics; Config.Observer is
// optional. Its methods are called with the cache's locks held, so they
// must be quick and must not call back into the cache.
type Observer interface {
	// Applied is called after the cache applies what the store sent: the
	// number of events received (0 for a list or a progress notification),
	// the revision the cache reflects and the number of objects it holds.
	Applied(events int, rev int64, objects int)
	// Dispatched is called with the time from receiving a batch of events
	// to having queued them on every watcher the dispatcher feeds.
	Dispatched(d time.Duration)
	// Watchers is called with the number of watchers when it changes.
	Watchers(n int)
	// Parked is called when the dispatcher parks a watcher whose queue is
	// full.
	Parked()
	// CaughtUp is called when such a watcher is level with the cache again.
	CaughtUp()
	// Undecodable is called when the cache first skips a stored value it
	// cannot decode (once per key and revision).
	Undecodable()
	// RingBytes is called with the bytes the ring's events pin
	// (Config.RingMaxBytes) when they may have changed.
	RingBytes(n int64)
	// Evicted is called with the number of events the ring dropped for
	// bytes alone (its own bound or the shared Budget), that its count
	// and age bounds would have kept.
	Evicted(n int)
}

// nopObserver is the Observer of a Config without one.
type nopObserver struct{}

func (nopObserver) Applied(int, int64, int)  {}
func (nopObserver) Dispatched(time.Duration) {}
func (nopObserver) Watchers(int)             {}
func (nopObserver) Parked()                  {}
func (nopObserver) CaughtUp()                {}
func (nopObserver) Undecodable()             {}
func (nopObserver) RingBytes(int64)          {}
func (nopObserver) Evicted(int)              {}
