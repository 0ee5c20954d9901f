package storagetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/storage"
)

func testWatchEvents(t *testing.T, s storage.Interface) {
	start := mustCurrent(t, s)
	w := mustWatch(t, s, ctxFor(t), "/w/", start)

	c := mustCreate(t, s, "/w/k", "v1")
	u := mustUpdate(t, s, "/w/k", c, "v2")
	d := mustDelete(t, s, "/w/k")
	created := storage.KV{Key: "/w/k", Value: []byte("v1"), CreateRevision: c, ModRevision: c}
	updated := storage.KV{Key: "/w/k", Value: []byte("v2"), CreateRevision: c, ModRevision: u}
	want := []storage.Event{
		{Type: storage.EventPut, Revision: c, KV: created},
		{Type: storage.EventPut, Revision: u, KV: updated, PrevKV: &created},
		{Type: storage.EventDelete, Revision: d, KV: storage.KV{Key: "/w/k", ModRevision: d}, PrevKV: &updated},
	}
	got := w.next(len(want))
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if !got[0].IsCreate() || got[1].IsCreate() {
		t.Errorf("IsCreate: %v %v, want true false", got[0].IsCreate(), got[1].IsCreate())
	}
}

func testWatchPrefix(t *testing.T, s storage.Interface) {
	w := mustWatch(t, s, ctxFor(t), "/w/in/", mustCurrent(t, s))
	mustCreate(t, s, "/w/out", "x")
	mustCreate(t, s, "/w/in", "x") // equal to the prefix without its slash: outside
	mustCreate(t, s, "/w/inside", "x")
	rev := mustCreate(t, s, "/w/in/k", "x")
	got := w.next(1)
	if got[0].KV.Key != "/w/in/k" || got[0].Revision != rev {
		t.Fatalf("watch of /w/in/ delivered %v, want PUT /w/in/k@%d", RecordsOf([][]storage.Event{got}), rev)
	}
}

// writeHistory makes n mixed writes under prefix and returns them as a History.
func writeHistory(t testing.TB, s storage.Interface, prefix string, n int) History {
	var h History
	live := map[string]int64{}
	for i := 0; len(h) < n; i++ {
		k := key(prefix, i%7)
		rev, ok := live[k]
		switch {
		case !ok:
			rev = mustCreate(t, s, k, fmt.Sprint(i))
			h = append(h, Record{Type: "PUT", Key: k, Revision: rev})
			live[k] = rev
		case i%3 == 0:
			rev = mustDelete(t, s, k)
			h = append(h, Record{Type: "DELETE", Key: k, Revision: rev})
			delete(live, k)
		default:
			rev = mustUpdate(t, s, k, rev, fmt.Sprint(i))
			h = append(h, Record{Type: "PUT", Key: k, Revision: rev})
			live[k] = rev
		}
	}
	return h
}

func testWatchFromEveryRevision(t *testing.T, s storage.Interface) {
	history := writeHistory(t, s, "/h/", 30)
	froms := []int64{0}
	for _, r := range history {
		froms = append(froms, r.Revision-1, r.Revision)
	}
	for _, from := range slices.Compact(slices.Sorted(slices.Values(froms))) {
		ctx, cancel := context.WithCancel(ctxFor(t))
		w := mustWatch(t, s, ctx, "/h/", from)
		tail := history.After(from)
		got := RecordsOf([][]storage.Event{w.next(len(tail))})
		if err := ValidateWatch(history, from, got, true); err != nil {
			t.Errorf("watch from %d: %v", from, err)
		}
		// A write after the tail proves nothing else was pending.
		rev := mustCreate(t, s, fmt.Sprintf("/h/sentinel-%d", from), "x")
		if next := w.next(1); next[0].Revision != rev {
			t.Errorf("watch from %d: after the tail came %v, want the sentinel at %d", from, RecordsOf([][]storage.Event{next}), rev)
		}
		cancel()
		history = append(history, Record{Type: "PUT", Key: fmt.Sprintf("/h/sentinel-%d", from), Revision: rev})
	}
}

func testWatchFromFuture(t *testing.T, s storage.Interface) {
	cur := mustCurrent(t, s)
	w := mustWatch(t, s, ctxFor(t), "/f/", cur+2)
	var revs []int64
	for i := range 4 {
		revs = append(revs, mustCreate(t, s, key("/f/", i), "x"))
	}
	var want []int64
	for _, r := range revs {
		if r > cur+2 {
			want = append(want, r)
		}
	}
	got := w.next(len(want))
	var gotRevs []int64
	for _, e := range got {
		gotRevs = append(gotRevs, e.Revision)
	}
	if diff := gocmp.Diff(want, gotRevs); diff != "" {
		t.Errorf("watch from future revision %d (-want +got):\n%s", cur+2, diff)
	}
}

// concurrentWrites runs writers goroutines each creating and updating perWriter
// keys under prefix, and returns the acknowledged writes as a History.
func concurrentWrites(t testing.TB, s storage.Interface, prefix string, writers, perWriter int) History {
	var mu sync.Mutex
	var h History
	var wg sync.WaitGroup
	ctx := ctxFor(t)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				k := fmt.Sprintf("%s%02d-%05d", prefix, w, i/2)
				var rev int64
				var err error
				if i%2 == 0 {
					rev, err = s.Create(ctx, k, []byte("v"))
				} else {
					rev, err = s.Update(ctx, k, 0, []byte("w"))
				}
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				mu.Lock()
				h = append(h, Record{Type: "PUT", Key: k, Revision: rev})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.SortFunc(h, func(a, b Record) int { return cmp.Compare(a.Revision, b.Revision) })
	return h
}

func testWatchOrderUnderConcurrentWriters(t *testing.T, s storage.Interface) {
	from := mustCurrent(t, s)
	w := mustWatch(t, s, ctxFor(t), "/cw/", from)
	history := concurrentWrites(t, s, "/cw/", 8, 100)
	got := RecordsOf([][]storage.Event{w.next(len(history))})
	if err := ValidateWatch(history, from, got, true); err != nil {
		t.Error(err)
	}
}

func testWatchCancel(t *testing.T, s storage.Interface) {
	ctx, cancel := context.WithCancel(ctxFor(t))
	w := mustWatch(t, s, ctx, "/c/", mustCurrent(t, s))
	mustCreate(t, s, "/c/k", "v")
	w.next(1)
	cancel()
	if err := w.end(); !errors.Is(err, context.Canceled) {
		t.Errorf("watch ended by its context: Err = %v, want context.Canceled", err)
	}
}

// slowWatcherWrites is how many events a watcher that does not read must be
// able to fall behind by without blocking writers or other watchers: more
// than any reasonable in-memory buffer, so backends must replay from history.
const slowWatcherWrites = 10000

func testSlowWatcherDoesNotBlock(t *testing.T, s storage.Interface) {
	from := mustCurrent(t, s)
	slow := mustWatch(t, s, ctxFor(t), "/sw/", from)
	fast := mustWatch(t, s, ctxFor(t), "/sw/", from)

	var fastGot []storage.Event
	var fastErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		fastGot, fastErr = fast.collect(slowWatcherWrites)
	}()
	history := concurrentWrites(t, s, "/sw/", 8, slowWatcherWrites/8)
	<-done // the writers finished while slow read nothing; fast got everything
	if fastErr != nil {
		t.Fatalf("fast watcher: %v", fastErr)
	}
	if err := ValidateWatch(history, from, RecordsOf([][]storage.Event{fastGot}), true); err != nil {
		t.Errorf("fast watcher: %v", err)
	}
	slowGot := RecordsOf([][]storage.Event{slow.next(len(history))})
	if err := ValidateWatch(history, from, slowGot, true); err != nil {
		t.Errorf("slow watcher, read after the writes: %v", err)
	}
}

func testCloseEndsWatches(t *testing.T, s storage.Interface) {
	w := mustWatch(t, s, ctxFor(t), "/x/", mustCurrent(t, s))
	idle := mustWatch(t, s, ctxFor(t), "/y/", mustCurrent(t, s))
	mustCreate(t, s, "/x/k", "v")
	w.next(1)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for name, r := range map[string]*watchRecorder{"active": w, "idle": idle} {
		if err := r.end(); !errors.Is(err, storage.ErrClosed) {
			t.Errorf("%s watch after Close: Err = %v, want ErrClosed", name, err)
		}
	}
	_, err := s.Get(ctxFor(t), "/x/k")
	expectErr(t, "Get after Close", err, storage.ErrClosed)
	_, err = s.Create(ctxFor(t), "/x/new", []byte("v"))
	expectErr(t, "Create after Close", err, storage.ErrClosed)
	if err := s.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}
