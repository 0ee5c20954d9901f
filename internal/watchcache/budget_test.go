package watchcache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
	"github.com/listwatch/listwatch/storage/storagetest"
)

// ringState is what a ring holds: its events' sizes, oldest first, and
// its start.
type ringState struct {
	sizes []int64
	start int64
}

func ringOf(t *testing.T, c *Cache) ringState {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	r := ringState{start: c.ringStart}
	var total int64
	for _, e := range c.ring {
		r.sizes = append(r.sizes, e.size)
		total += e.size
	}
	if total != c.ringBytes {
		t.Fatalf("the ring counts %d bytes, its events %d", c.ringBytes, total)
	}
	return r
}

func (r ringState) bytes() int64 { return sum(r.sizes) }

func sum(sizes []int64) int64 {
	var n int64
	for _, s := range sizes {
		n += s
	}
	return n
}

// ringWrites makes ten writes to three objects (creates, then updates
// that grow them), the same revisions and bytes on every fresh store.
func ringWrites(wr *writer) {
	for i := range 10 {
		wr.put("ns", fmt.Sprint("k", i%3), map[string]string{"pad": strings.Repeat("x", 10*i)})
	}
}

// TestRingMaxBytes: the ring keeps the newest events whose bytes fit
// RingMaxBytes, however many RingMinEvents asks for (1,024 by default):
// four at the limit, three one byte short of it. A watcher that read
// nothing meanwhile still gets every event once, in order, from the
// store's history; one that reads only after that history is compacted
// gets 410 Gone.
func TestRingMaxBytes(t *testing.T) { watchModes(t, testRingMaxBytes) }

func testRingMaxBytes(t *testing.T, watch func(*testing.T, *Cache, WatchOptions) *Watcher) {
	dry := memory.New()
	defer dry.Close()
	probe := newCache(t, dry, Config{})
	wr := newWriter(t, dry)
	ringWrites(wr)
	waitRev(t, probe, wr.history[len(wr.history)-1].Revision)
	sizes := ringOf(t, probe).sizes
	const keep = 4
	limit := sum(sizes[len(sizes)-keep:])
	for _, tc := range []struct {
		max  int64
		kept int
	}{{limit, keep}, {limit - 1, keep - 1}} {
		t.Run(fmt.Sprint(tc.max), func(t *testing.T) {
			s := memory.New()
			defer s.Close()
			obs := &countingObserver{}
			c := newCache(t, s, Config{RingMaxBytes: tc.max, Observer: obs})
			from := c.Revision()
			reader := watch(t, c, WatchOptions{From: from})
			late := watch(t, c, WatchOptions{From: from})
			wr := newWriter(t, s)
			ringWrites(wr)
			n := len(wr.history)
			waitRev(t, c, wr.history[n-1].Revision)
			got := ringOf(t, c)
			if len(got.sizes) != tc.kept || got.start != wr.history[n-tc.kept-1].Revision {
				t.Fatalf("ring of %d bytes holds %d events after %d, want %d after %d", tc.max, len(got.sizes), got.start, tc.kept, wr.history[n-tc.kept-1].Revision)
			}
			if o := obs.snapshot(); o.ringBytes != sum(sizes[n-tc.kept:]) || o.evicted != n-tc.kept {
				t.Errorf("observer saw %d ring bytes and %d evicted, want %d and %d", o.ringBytes, o.evicted, sum(sizes[n-tc.kept:]), n-tc.kept)
			}
			recs, _ := read(t, reader, n)
			if err := storagetest.ValidateWatch(wr.history, from, recs, true); err != nil {
				t.Errorf("watcher that did not read while the ring was trimmed: %v", err)
			}
			if err := s.Compact(t.Context(), wr.history[n-2].Revision); err != nil {
				t.Fatal(err)
			}
			_, err := next(t.Context(), late)
			var se *api.StatusError
			if !errors.As(err, &se) || se.Status.Code != http.StatusGone {
				t.Errorf("watcher behind the ring and the compacted history: %v, want 410 Gone", err)
			}
		})
	}
}

// TestRingTrimmedByAgeWithoutWrites: the events beyond RingMinEvents go
// when they reach RingMaxAge, with no write to trigger the trim.
func TestRingTrimmedByAgeWithoutWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		defer s.Close()
		obs := &countingObserver{}
		c := newCache(t, s, Config{RingMinEvents: 1, RingMaxAge: time.Minute, Observer: obs})
		wr := newWriter(t, s)
		for i := range 3 {
			wr.put("ns", fmt.Sprint("k", i), nil)
		}
		waitRev(t, c, wr.history[2].Revision)
		all := ringOf(t, c)
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		if got := ringOf(t, c); len(got.sizes) != 3 {
			t.Fatalf("ring holds %d events just before their age is reached, want 3", len(got.sizes))
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		got := ringOf(t, c)
		if len(got.sizes) != 1 || got.start != wr.history[1].Revision {
			t.Fatalf("ring holds %d events after %d once they aged, want the RingMinEvents 1 after %d", len(got.sizes), got.start, wr.history[1].Revision)
		}
		if o := obs.snapshot(); o.ringBytes != all.sizes[2] || o.evicted != 0 {
			t.Errorf("observer saw %d ring bytes, %d evicted; want %d, none (age is no eviction)", o.ringBytes, o.evicted, all.sizes[2])
		}
	})
}

// TestBudgetSharedByCaches: two caches share a Budget. At its limit both
// keep every event; one byte short, the cache over its share (six events
// against two) drops its oldest, though the write that crossed the limit
// went to the other one and no write comes to it. Closing a cache gives
// its bytes back.
func TestBudgetSharedByCaches(t *testing.T) {
	const big, small = "/registry/core/big/", "/registry/core/small/"
	run := func(t *testing.T, b *Budget) (rings [2]ringState, evicted int, afterClose int64) {
		synctest.Test(t, func(t *testing.T) {
			s := memory.New()
			defer s.Close()
			obs := &countingObserver{}
			bc := newCacheAt(t, s, big, Config{Budget: b, Observer: obs})
			sc := newCacheAt(t, s, small, Config{Budget: b})
			var rev int64
			for i := range 8 {
				p := big
				if i >= 6 {
					p = small
				}
				var err error
				if rev, err = s.Create(t.Context(), fmt.Sprint(p, "ns/k", i), cm("ns", fmt.Sprint("k", i), nil)); err != nil {
					t.Fatal(err)
				}
				if i == 5 {
					waitRev(t, bc, rev) // its writes are in before the other's cross the budget
				}
			}
			waitRev(t, sc, rev)
			synctest.Wait() // the big cache's trim, when asked
			rings = [2]ringState{ringOf(t, bc), ringOf(t, sc)}
			if used := b.Used(); used != rings[0].bytes()+rings[1].bytes() || used > b.Max() {
				t.Errorf("budget of %d used %d; the rings hold %d", b.Max(), used, rings[0].bytes()+rings[1].bytes())
			}
			evicted = obs.snapshot().evicted
			sc.Close()
			afterClose = b.Used()
		})
		return rings, evicted, afterClose
	}
	probe, _, _ := run(t, NewBudget(1<<40, 1<<40))
	total := probe[0].bytes() + probe[1].bytes()
	for _, tc := range []struct {
		max     int64
		big     []int64
		evicted int
	}{{total, probe[0].sizes, 0}, {total - 1, probe[0].sizes[1:], 1}} {
		t.Run(fmt.Sprint(tc.max), func(t *testing.T) {
			rings, evicted, afterClose := run(t, NewBudget(tc.max, 1<<40))
			if fmt.Sprint(rings[0].sizes) != fmt.Sprint(tc.big) || len(rings[1].sizes) != 2 || evicted != tc.evicted {
				t.Errorf("budget %d: rings hold %v and %v, %d evicted; want %v and two events, %d evicted", tc.max, rings[0].sizes, rings[1].sizes, evicted, tc.big, tc.evicted)
			}
			if afterClose != rings[0].bytes() {
				t.Errorf("budget used %d after one cache closed, want the other's %d", afterClose, rings[0].bytes())
			}
		})
	}
}

// queuedItems returns how many items w has queued.
func queuedItems(w *Watcher) int {
	w.lock()
	defer w.unlock()
	return len(w.queue)
}

// TestReplayBudget: watchers behind the ring replay from the store's
// history, each into copies of its own, which its reader holds until it
// calls Pending again. While those copies fill the Budget's replay bound,
// another replay takes one event at a time: at the bound a first replay
// takes three objects of the bound's three and the next replay one, one
// byte past it four. Every replayed event still arrives once, in order,
// and Stop gives the bytes back.
func TestReplayBudget(t *testing.T) {
	s, from, wr := tenWrites(t, 10) // the objects' revisions have the same digits
	// The cache starts after the writes: its ring holds none of them.
	size := func(b *Budget) (a, bOne int, replayed int64) {
		c := newCache(t, s, Config{Budget: b})
		first, second := watch(t, c, WatchOptions{From: from}), watch(t, c, WatchOptions{From: from})
		if items, err := first.Pending(t.Context(), nil); err != nil || len(items) > 0 {
			t.Fatalf("first Pending: %d items, %v; want the catch-up only", len(items), err)
		}
		a = queuedItems(first)
		if items, err := first.Pending(t.Context(), nil); err != nil || len(items) != a {
			t.Fatalf("second Pending: %d items, %v; want the %d queued", len(items), err, a)
		}
		if _, err := second.Pending(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		bOne, replayed = queuedItems(second), b.Replayed()
		first.Stop()
		second.Stop()
		if n := b.Replayed(); n != 0 {
			t.Errorf("replay budget holds %d bytes after both watchers stopped", n)
		}
		c.Close()
		return a, bOne, replayed
	}
	all, _, total := size(NewBudget(1<<40, 1<<40))
	if all != len(wr.history) {
		t.Fatalf("a replay within every bound took %d events, want all %d", all, len(wr.history))
	}
	one := total / int64(2*all) // the events' objects are alike, each replayed twice
	for _, tc := range []struct {
		max         int64
		first, next int
	}{{3 * one, 3, 1}, {3*one + 1, 4, 1}} {
		a, b, replayed := size(NewBudget(1<<40, tc.max))
		if a != tc.first || b != tc.next || replayed != int64(a+b)*one {
			t.Errorf("replay bound %d: replays took %d then %d events, holding %d bytes; want %d then %d, %d bytes", tc.max, a, b, replayed, tc.first, tc.next, int64(tc.first+tc.next)*one)
		}
	}
	watchModes(t, func(t *testing.T, watch func(*testing.T, *Cache, WatchOptions) *Watcher) {
		b := NewBudget(1<<40, one)
		c := newCache(t, s, Config{Budget: b})
		ws := []*Watcher{watch(t, c, WatchOptions{From: from}), watch(t, c, WatchOptions{From: from})}
		for i, w := range ws {
			recs, _ := read(t, w, len(wr.history))
			if err := storagetest.ValidateWatch(wr.history, from, recs, true); err != nil {
				t.Errorf("watcher %d replaying one event at a time: %v", i, err)
			}
		}
	})
}

// TestRingCountsSecondEncodings: a second encoding made for an event the
// ring holds (a protobuf watcher's) counts in the ring's bytes and the
// Budget from when it is made, so that with four events' JSON at the
// ring's limit, the 10 bytes of one event's encoding make the ring drop
// its oldest at the next write (all four stay without it). Once the ring
// has let an event go, or the cache has closed, an encoding made later is
// charged to nothing.
func TestRingCountsSecondEncodings(t *testing.T) {
	dry := memory.New()
	defer dry.Close()
	probe := newCache(t, dry, Config{})
	wr := newWriter(t, dry)
	for i := range 4 {
		wr.put("ns", fmt.Sprint("k", i), nil)
	}
	waitRev(t, probe, wr.history[3].Revision)
	sizes := ringOf(t, probe).sizes
	encode := func() ([]byte, error) { return []byte("0123456789"), nil }
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			s := memory.New()
			defer s.Close()
			b := NewBudget(1<<40, 1<<40)
			c := newCache(t, s, Config{RingMaxBytes: sum(sizes), Budget: b})
			w := watch(t, c, WatchOptions{From: c.Revision()})
			wr := newWriter(t, s)
			for i := range 3 {
				wr.put("ns", fmt.Sprint("k", i), nil)
			}
			_, items := read(t, w, 3)
			if encoded {
				if _, err := items[0].Alt.Get(encode); err != nil {
					t.Fatal(err)
				}
				if used, want := b.Used(), sum(sizes[:3])+10; used != want {
					t.Errorf("budget used %d with one event's encoding made, want %d", used, want)
				}
			}
			wr.put("ns", "k3", nil)
			waitRev(t, c, wr.history[3].Revision)
			want := sizes
			if encoded {
				want = sizes[1:]
			}
			if got := ringOf(t, c).sizes; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("ring holds events of %v bytes, want %v", got, want)
			}
			if used := b.Used(); used != sum(want) {
				t.Errorf("budget used %d, want the ring's %d", used, sum(want))
			}
			_, later := read(t, w, 1)
			c.Close()
			for _, it := range append(items, later...) {
				if _, err := it.Alt.Get(encode); err != nil {
					t.Fatal(err)
				}
			}
			if used := b.Used(); used != 0 {
				t.Errorf("budget used %d after the cache closed", used)
			}
		})
	}
}

// gatedStore holds every Watch from an old revision (a replay's) until
// gate is closed, counting those in flight.
type gatedStore struct {
	storage.Interface
	from     int64 // a Watch from before it is a replay's
	gate     chan struct{}
	inflight atomic.Int32
}

func (s *gatedStore) Watch(ctx context.Context, prefix string, rev int64) (storage.Watcher, error) {
	if rev < s.from {
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Interface.Watch(ctx, prefix, rev)
}

// TestReplaysReadTheStoreFewAtATime: however many watchers catch up from
// the store's history at once, replaySlots of them read it, each holding
// what the store's watch reads ahead; the others wait their turn and then
// get every event once, in order.
func TestReplaysReadTheStoreFewAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		defer mem.Close()
		wr := newWriter(t, mem)
		for i := range 3 {
			wr.put("ns", fmt.Sprint("k", i), nil)
		}
		now, err := mem.CurrentRevision(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		s := &gatedStore{Interface: mem, from: now, gate: make(chan struct{})}
		c := newCache(t, s, Config{Budget: NewBudget(1<<40, 1<<40)}) // its ring holds none of the writes
		const watchers = 3 * replaySlots
		recs := make([][]storagetest.Record, watchers)
		var wg sync.WaitGroup
		for i := range watchers {
			w := watch(t, c, WatchOptions{})
			wg.Go(func() { recs[i], _ = read(t, w, len(wr.history)) })
		}
		synctest.Wait()
		if n := s.inflight.Load(); n != replaySlots {
			t.Errorf("%d replays read the store at once, want %d", n, replaySlots)
		}
		close(s.gate)
		wg.Wait()
		for i, r := range recs {
			if err := storagetest.ValidateWatch(wr.history, 0, r, true); err != nil {
				t.Errorf("watcher %d: %v", i, err)
			}
		}
	})
}

// TestReplayCutReported: a replay whose queue fills while the shared
// bound is full (another reader holds it) cuts its store batch and says
// so, pos after the last event it queued, so that the replay ends there:
// by its next batch, or the store's progress, the other reader may have
// released the bound, and pos would pass the events cut. The next
// catch-up reads them again, and the watcher gets every event once, in
// order.
func TestReplayCutReported(t *testing.T) {
	s, from, wr := tenWrites(t, 0)
	b := NewBudget(1<<40, 1)
	c := newCache(t, s, Config{Budget: b})
	w := watch(t, c, WatchOptions{From: from})
	var batch []storage.Event
	for _, h := range wr.history {
		batch = append(batch, storage.Event{Type: storage.EventPut, KV: storage.KV{Key: prefix + h.Key, Value: cm("ns", strings.TrimPrefix(h.Key, "ns/"), nil), ModRevision: h.Revision}, Revision: h.Revision})
	}
	b.chargeReplay(1) // another replay holds the bound
	if cut, _ := w.replayBatch(context.Background(), batch); !cut {
		t.Fatal("a replay that filled its queue under a full bound did not say it was cut")
	}
	if n, pos := queuedItems(w), w.pos; n != 1 || pos != batch[0].Revision {
		t.Fatalf("the cut replay queued %d events up to %d, want 1 up to %d", n, pos, batch[0].Revision)
	}
	b.chargeReplay(-1)
	recs, _ := read(t, w, len(wr.history))
	if err := storagetest.ValidateWatch(wr.history, from, recs, true); err != nil {
		t.Error(err)
	}
}

// tenWrites makes a memory store with others objects of another prefix,
// then ten of the cache's: it returns the store, the revision before the
// ten, and their writer.
func tenWrites(t *testing.T, others int) (*memory.Store, int64, *writer) {
	t.Helper()
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	writeOthers(t, s, others)
	from, err := s.CurrentRevision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wr := newWriter(t, s)
	for i := range 10 {
		wr.put("ns", fmt.Sprint("k", i), nil)
	}
	return s, from, wr
}
