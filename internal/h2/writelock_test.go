package h2

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestWriteLockUnlessBlocking: a writer that must not wait waits for a
// holder that does not wait on the socket, and takes the lock when it is
// released; it gives up when the holder starts waiting on the socket, at
// once if the holder waits already, and after maxLockWait if the holder
// keeps the lock. No case spins: each wait is on a channel or a timer
// (synctest.Wait finds the waiter durably blocked).
func TestWriteLockUnlessBlocking(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		blockingFirst, block bool
		keep                 bool // the holder keeps the lock past maxLockWait
		want                 bool
	}{
		{"released", false, false, false, true},
		{"starts blocking", false, true, false, false},
		{"blocking already", true, false, false, false},
		{"held too long", false, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newWriteLock()
				l.Lock()
				if tc.blockingFirst {
					l.startBlocking()
				}
				got := make(chan bool, 1)
				go func() {
					ok := l.LockUnlessBlocking()
					if ok {
						l.Unlock()
					}
					got <- ok
				}()
				synctest.Wait()
				if !tc.blockingFirst {
					select {
					case ok := <-got:
						t.Fatalf("LockUnlessBlocking returned %v while the holder held the lock without waiting on the socket", ok)
					default: // waiting
					}
					switch {
					case tc.keep:
						time.Sleep(maxLockWait) // the fake clock's: synctest
					case tc.block:
						l.startBlocking()
					default:
						l.Unlock()
					}
				}
				if ok := <-got; ok != tc.want {
					t.Fatalf("LockUnlessBlocking = %v, want %v", ok, tc.want)
				}
			})
		})
	}
}
