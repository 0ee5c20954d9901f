package workqueue

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func newQueue(t *testing.T) *Queue[string] {
	t.Helper()
	q := New(Options[string]{})
	t.Cleanup(q.ShutDown)
	return q
}

// drainReady takes every ready item, marking each Done.
func drainReady(q *Queue[string]) []string {
	var got []string
	for q.Len() > 0 {
		item, _ := q.Get()
		got = append(got, item)
		q.Done(item)
	}
	return got
}

func TestAddDeduplicatesAndKeepsOrder(t *testing.T) {
	q := newQueue(t)
	for _, s := range []string{"a", "b", "a", "c", "b", "a"} {
		q.Add(s)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, drainReady(q)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
}

func TestAddWhileProcessingRequeuesAfterDone(t *testing.T) {
	q := newQueue(t)
	q.Add("a")
	item, _ := q.Get()
	q.Add("a")
	q.Add("a")
	if q.Len() != 0 {
		t.Fatalf("Len = %d while a is processing, want 0", q.Len())
	}
	q.Done(item)
	if diff := cmp.Diff([]string{"a"}, drainReady(q)); diff != "" {
		t.Errorf("after Done (-want +got):\n%s", diff)
	}
}

func TestNeverProcessedConcurrently(t *testing.T) {
	q := newQueue(t)
	var inFlight, maxInFlight, processed atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				n := inFlight.Add(1)
				for {
					m := maxInFlight.Load()
					if n <= m || maxInFlight.CompareAndSwap(m, n) {
						break
					}
				}
				processed.Add(1)
				inFlight.Add(-1)
				q.Done(item)
			}
		})
	}
	for range 1000 {
		q.Add("same")
	}
	q.ShutDownWithDrain()
	wg.Wait()
	if maxInFlight.Load() != 1 {
		t.Errorf("one item was processed by %d workers at once", maxInFlight.Load())
	}
	if processed.Load() < 1 {
		t.Error("the item was never processed")
	}
}

func TestShutDownLetsWorkersDrainQueued(t *testing.T) {
	q := newQueue(t)
	q.Add("a")
	q.Add("b")
	q.ShutDown()
	q.Add("c")
	if diff := cmp.Diff([]string{"a", "b"}, drainReady(q)); diff != "" {
		t.Errorf("after ShutDown (-want +got):\n%s", diff)
	}
	if _, shutdown := q.Get(); !shutdown {
		t.Error("Get on an empty shut-down queue did not report shutdown")
	}
	if !q.ShuttingDown() {
		t.Error("ShuttingDown = false")
	}
}

func TestShutDownWithDrainWaitsForDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{})
		q.Add("a")
		item, _ := q.Get()
		var drained atomic.Bool
		go func() {
			q.ShutDownWithDrain()
			drained.Store(true)
		}()
		synctest.Wait()
		if drained.Load() {
			t.Fatal("ShutDownWithDrain returned while an item was processing")
		}
		q.Done(item)
		synctest.Wait()
		if !drained.Load() {
			t.Fatal("ShutDownWithDrain did not return after Done")
		}
	})
}

func TestGetBlocksUntilAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{})
		got := make(chan string, 1)
		go func() {
			item, _ := q.Get()
			got <- item
		}()
		synctest.Wait()
		q.Add("x")
		if item := <-got; item != "x" {
			t.Errorf("Get = %q, want x", item)
		}
		q.ShutDown()
	})
}

func TestAddAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{})
		defer q.ShutDown()
		q.AddAfter("late", 2*time.Second)
		q.AddAfter("late", 5*time.Second) // the earlier time stands
		q.AddAfter("early", time.Second)
		q.AddAfter("now", 0)
		if diff := cmp.Diff([]string{"now"}, drainReady(q)); diff != "" {
			t.Errorf("at 0s (-want +got):\n%s", diff)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"early"}, drainReady(q)); diff != "" {
			t.Errorf("at 1s (-want +got):\n%s", diff)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"late"}, drainReady(q)); diff != "" {
			t.Errorf("at 2s (-want +got):\n%s", diff)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if q.Len() != 0 {
			t.Errorf("late was added twice")
		}
	})
}

func TestAddAfterEarlierReplacesLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{})
		defer q.ShutDown()
		q.AddAfter("a", 5*time.Second)
		q.AddAfter("a", time.Second)
		time.Sleep(time.Second)
		synctest.Wait()
		if q.Len() != 1 {
			t.Errorf("Len at 1s = %d, want 1", q.Len())
		}
	})
}

func TestShutDownDropsDelayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{})
		q.AddAfter("a", time.Second)
		q.ShutDown()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if q.Len() != 0 {
			t.Errorf("a delayed item was added after ShutDown")
		}
	})
}
