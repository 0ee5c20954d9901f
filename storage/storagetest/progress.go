package storagetest

import (
	"slices"
	"testing"
	"time"

	"github.com/listwatch/listwatch/storage"
)

// testWatchProgress checks storage.ProgressWatcher, which every backend's
// watchers implement: progress covers writes to other prefixes, and never
// runs ahead of the events sent.
func testWatchProgress(t *testing.T, s storage.Interface) {
	ctx := ctxFor(t)
	from := mustCurrent(t, s)
	w, err := s.Watch(ctx, "/pr/a/", from)
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := w.(storage.ProgressWatcher)
	if !ok {
		t.Fatalf("%T does not implement storage.ProgressWatcher", w)
	}
	if p := pw.Progress(); p < from {
		t.Fatalf("Progress() = %d before any write, below the watch's start %d", p, from)
	}
	// Writes elsewhere advance progress without events.
	other := mustCreate(t, s, "/pr/b/k", "v")
	waitProgress(t, pw, other)
	select {
	case batch := <-w.Events():
		t.Fatalf("a write outside the prefix was delivered: %v", RecordsOf([][]storage.Event{batch}))
	default:
	}
	// Progress never covers an event that was not sent.
	var got []int64
	var revs []int64
	for i := range 50 {
		revs = append(revs, mustCreate(t, s, key("/pr/a/", i), "v"))
		p := pw.Progress()
		got = append(got, drain(w)...)
		for _, r := range revs {
			if r <= p && !slices.Contains(got, r) {
				t.Fatalf("Progress() = %d but the event at %d was not sent (received %v)", p, r, got)
			}
		}
	}
}

// waitProgress requests progress until it reaches rev, with a deadline.
func waitProgress(t *testing.T, pw storage.ProgressWatcher, rev int64) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for pw.Progress() < rev {
		if err := pw.RequestProgress(ctxFor(t)); err != nil {
			t.Fatalf("RequestProgress: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("Progress() = %d, never reached %d", pw.Progress(), rev)
		}
		time.Sleep(time.Millisecond) // polling a getter: the wait is bounded by the deadline above
	}
}

// drain returns the revisions of every batch already waiting on w.
func drain(w storage.Watcher) []int64 {
	var revs []int64
	for {
		select {
		case batch := <-w.Events():
			for _, e := range batch {
				revs = append(revs, e.Revision)
			}
		default:
			return revs
		}
	}
}
