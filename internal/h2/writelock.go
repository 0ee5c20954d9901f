package h2

import (
	"sync"
	"time"
)

// writeLock is a connection's write side: a lock whose holder says when
// it waits on the socket (startBlocking), so that a writer that must not
// wait (a detached stream's sender) can wait for a holder that only
// frames or copies, and give up as soon as the holder waits on the
// socket, or if it does already, or after maxLockWait (LockUnlessBlocking).
// The lock is a channel's one slot, so that a wait can end any way without
// spinning.
type writeLock struct {
	token chan struct{} // holds a value while locked

	mu sync.Mutex // a leaf
	// guarded by mu:
	blocking bool
	// blockingc is closed when the holder starts waiting on the socket:
	// made by the first writer that waits for the lock (none is made
	// while no one waits), forgotten when the holder's wait ends.
	blockingc chan struct{}
}

func newWriteLock() writeLock { return writeLock{token: make(chan struct{}, 1)} }

func (l *writeLock) Lock()   { l.token <- struct{}{} }
func (l *writeLock) Unlock() { <-l.token }

// maxLockWait bounds LockUnlessBlocking's wait. A holder that only frames
// or copies is done in microseconds; one that holds the lock longer (a
// goroutine descheduled on a loaded machine) must not hold up a sender,
// which serves hundreds of watches: the send is then left to its watch's
// own goroutine, as when the socket is full.
const maxLockWait = 10 * time.Millisecond

// LockUnlessBlocking takes the lock unless its holder waits on the
// socket: it waits for a holder that does not, until it releases the
// lock, or starts waiting on the socket, or maxLockWait has passed
// (false).
func (l *writeLock) LockUnlessBlocking() bool {
	select {
	case l.token <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(maxLockWait) // only when the lock is held
	defer t.Stop()
	select {
	case l.token <- struct{}{}:
		return true
	case <-l.blockingNow():
		return false
	case <-t.C:
		return false
	}
}

// closedChan is blockingNow's while the holder waits on the socket.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// blockingNow returns a channel closed once the holder waits on the
// socket (at once if it does).
func (l *writeLock) blockingNow() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.blocking {
		return closedChan
	}
	if l.blockingc == nil {
		l.blockingc = make(chan struct{})
	}
	return l.blockingc
}

// startBlocking says the holder is about to wait on the socket, and
// reports whether it was not already (then stopBlocking ends it).
func (l *writeLock) startBlocking() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.blocking {
		return false
	}
	l.blocking = true
	if l.blockingc != nil {
		close(l.blockingc)
		l.blockingc = nil
	}
	return true
}

// stopBlocking says the holder's wait on the socket is over.
func (l *writeLock) stopBlocking() {
	l.mu.Lock()
	l.blocking = false
	l.mu.Unlock()
}
