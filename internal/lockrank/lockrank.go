// Package lockrank holds the order in which the watch engine's locks are
// taken, and checks it in race-detector builds (go test -race): a
// goroutine that takes one of these locks while it holds one of the same
// or a later rank panics, naming both. Other builds only lock.
//
// The order, first to last:
//
//	watchcache.Cache.mu          the dispatcher wakes watchers under it
//	watchcache.LaneBlock.serving a WakePolled may serve a lane under Cache.mu
//	watchstream.detachedWatch.mu Wake, and a lane's hand-over, take it
//	watchcache.Watcher.mu        LeaveLane under detachedWatch.mu
//	watchstream.senderPool.mu    a wake queues the watch on the pool
//
// A lock of the same rank is never taken twice by one goroutine.
package lockrank

import "sync"

// A Rank is one lock's place in the order: the types below.
type Rank interface{ rank() (int, string) }

// The ranks.
type (
	CacheMu          struct{}
	LaneBlockServing struct{}
	DetachedWatchMu  struct{}
	WatcherMu        struct{}
	SenderPoolMu     struct{}
)

func (CacheMu) rank() (int, string)          { return 1, "watchcache.Cache.mu" }
func (LaneBlockServing) rank() (int, string) { return 2, "watchcache.LaneBlock.serving" }
func (DetachedWatchMu) rank() (int, string)  { return 3, "watchstream.detachedWatch.mu" }
func (WatcherMu) rank() (int, string)        { return 4, "watchcache.Watcher.mu" }
func (SenderPoolMu) rank() (int, string)     { return 5, "watchstream.senderPool.mu" }

// Mutex is a sync.Mutex of rank R.
type Mutex[R Rank] struct{ mu sync.Mutex }

func (m *Mutex[R]) Lock() {
	if checking {
		acquire[R]()
	}
	m.mu.Lock()
}

func (m *Mutex[R]) Unlock() {
	m.mu.Unlock()
	if checking {
		release[R]()
	}
}

// RWMutex is a sync.RWMutex of rank R, for readers as for writers.
type RWMutex[R Rank] struct{ mu sync.RWMutex }

func (m *RWMutex[R]) Lock() {
	if checking {
		acquire[R]()
	}
	m.mu.Lock()
}

func (m *RWMutex[R]) Unlock() {
	m.mu.Unlock()
	if checking {
		release[R]()
	}
}

func (m *RWMutex[R]) RLock() {
	if checking {
		acquire[R]()
	}
	m.mu.RLock()
}

func (m *RWMutex[R]) RUnlock() {
	m.mu.RUnlock()
	if checking {
		release[R]()
	}
}
