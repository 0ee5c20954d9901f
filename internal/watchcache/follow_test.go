package watchcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage/memory"
)

// followLog records, in order, what Follow's hooks were told.
type followLog chan string

func (l followLog) options(c func() *Cache) FollowOptions {
	return FollowOptions{
		Cache:    c,
		OnStart:  func() { l <- "start" },
		OnSynced: func() { l <- "synced" },
		Each: func(items []Item) {
			for _, it := range items {
				obj, _ := api.ParseObject(it.Object)
				l <- it.Type + " " + obj.Namespace() + "/" + obj.Name()
			}
		},
		Ended: func(err error, retry time.Duration) { l <- fmt.Sprintf("ended %v, retry %v", err, retry) },
		Retry: time.Millisecond,
	}
}

// expect fails unless the next entries are want.
func (l followLog) expect(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case s := <-l:
			got = append(got, s)
		case <-timeout:
			t.Fatalf("got %q, then nothing; want %q", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// runFollow runs Follow until the test ends, and checks that it returns then.
func runFollow(t *testing.T, opts FollowOptions) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { Follow(ctx, opts) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

func TestFollowGivesInitialEventsThenChanges(t *testing.T) {
	s := memory.New()
	w := newWriter(t, s)
	w.put("ns", "a", nil)
	w.put("ns", "b", nil)
	c := newCache(t, s, Config{})
	log := make(followLog, 100)
	opts := log.options(func() *Cache { return c })
	opts.InitialEvents = true
	runFollow(t, opts)
	log.expect(t, "start", "ADDED ns/a", "ADDED ns/b", "synced")
	w.put("ns", "a", map[string]string{"x": "y"})
	w.del("ns", "b")
	log.expect(t, "MODIFIED ns/a", "DELETED ns/b")
}

func TestFollowFromTheCachesRevision(t *testing.T) {
	s := memory.New()
	w := newWriter(t, s)
	w.put("ns", "a", nil)
	c := newCache(t, s, Config{})
	log := make(followLog, 100)
	runFollow(t, log.options(func() *Cache { return c }))
	log.expect(t, "start")
	w.put("ns", "b", nil)
	log.expect(t, "ADDED ns/b")
}

func TestFollowRestartsWithBackoff(t *testing.T) {
	s := memory.New()
	w := newWriter(t, s)
	w.put("ns", "a", nil)
	first, second := newCache(t, s, Config{}), newCache(t, s, Config{})
	calls := 0
	log := make(followLog, 100)
	opts := log.options(func() *Cache {
		calls++
		switch {
		case calls <= 3: // closed, no successor yet
			return nil
		case calls == 4:
			return first
		}
		return second
	})
	opts.InitialEvents = true
	runFollow(t, opts)
	log.expect(t, "ended watch cache closed, retry 1ms", "ended watch cache closed, retry 2ms", "ended watch cache closed, retry 4ms")
	log.expect(t, "start", "ADDED ns/a", "synced")
	first.Close()
	// The watch had begun: the backoff starts over.
	log.expect(t, "ended watch cache closed, retry 1ms", "start", "ADDED ns/a", "synced")
}

func TestFollowWaitsForFreshness(t *testing.T) {
	s := memory.New()
	w := newWriter(t, s)
	c := newCache(t, s, Config{})
	log := make(followLog, 100)
	opts := log.options(func() *Cache { return c })
	opts.InitialEvents = true
	fails := true
	opts.Fresh = func(ctx context.Context) (int64, error) {
		if fails {
			fails = false
			return 0, errors.New("no revision")
		}
		return w.put("ns", "a", nil), nil // the initial events must have it
	}
	runFollow(t, opts)
	log.expect(t, "ended no revision, retry 1ms", "start", "ADDED ns/a", "synced")
}

func TestFollowCallsOnDueWithoutCuttingACatchUp(t *testing.T) {
	s := memory.New()
	w := newWriter(t, s)
	// A follower that falls 500 events behind is parked and catches up
	// from the store's history, while OnDue is due all along.
	c := newCache(t, s, Config{WatcherBufferBytes: 2048, RingMaxEvents: 50, RingMinEvents: 10})
	const n = 500
	synced, release := make(chan struct{}), make(chan struct{})
	names := make(chan string, n)
	var got, dues int // Follow's goroutine's
	runFollow(t, FollowOptions{
		Cache:         func() *Cache { return c },
		InitialEvents: true,
		OnSynced: func() {
			if got == 0 { // not after a restart, which fails the test
				close(synced)
			}
		},
		Each: func(items []Item) {
			if got == 0 {
				<-release
			}
			for _, it := range items {
				obj, _ := api.ParseObject(it.Object)
				names <- obj.Name()
				got++
			}
		},
		Due:   func() (time.Time, bool) { return time.Time{}, got < n },
		OnDue: func() { dues++ },
		Ended: func(err error, _ time.Duration) { t.Errorf("the watch ended: %v", err) },
	})
	<-synced
	for i := range n {
		w.put("ns", fmt.Sprint("k", i), nil)
	}
	close(release)
	for i := range n {
		select {
		case name := <-names:
			if want := fmt.Sprint("k", i); name != want {
				t.Fatalf("change %d is of %s, want %s", i, name, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d changes, then nothing", i)
		}
	}
	if dues == 0 {
		t.Error("OnDue was not called")
	}
}
