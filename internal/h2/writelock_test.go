package h2

import (
	"testing"
	"testing/synctest"
)

// TestWriteLockUnlessBlocking: a writer that must not wait waits for a
// holder that does not wait on the socket, and takes the lock when it is
// released; it gives up when the holder starts waiting on the socket, or
// at once if the holder waits already. No case spins: each wait is on a
// channel (synctest.Wait finds the waiter durably blocked).
func TestWriteLockUnlessBlocking(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		blockingFirst, block bool
		want                 bool
	}{
		{"released", false, false, true},
		{"starts blocking", false, true, false},
		{"blocking already", true, false, false},
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
					if tc.block {
						l.startBlocking()
					} else {
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
