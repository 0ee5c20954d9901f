package storagetest

import (
	"testing"
	"time"

	"github.com/listwatch/listwatch/storage"
)

// Collect reads the next n events from w, for a backend's own tests beside
// the suite. It fails t if they do not come within the suite's deadline,
// the watch ends first, a batch brings more than n, or revisions go
// backwards.
func Collect(t testing.TB, w storage.Watcher, n int) []storage.Event {
	t.Helper()
	got := (&watchRecorder{t: t, w: w}).next(n)
	if err := ValidateOrdered(RecordsOf([][]storage.Event{got})); err != nil {
		t.Fatal(err)
	}
	return got
}

// WaitEnd reads w until it ends, discarding what it still delivers, and
// returns why it ended. It fails t if the watch is still open at the
// suite's deadline.
func WaitEnd(t testing.TB, w storage.Watcher) error {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
		case <-deadline.C:
			t.Fatalf("watch still open after %v", waitTimeout)
		}
	}
}
