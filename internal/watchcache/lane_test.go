package watchcache

import (
	"testing"

	"github.com/listwatch/listwatch/storage/memory"
)

// laneTest is a cache whose batches are captured, with one laned watcher
// of namespace a.
type laneTest struct {
	t       *testing.T
	c       *Cache
	wr      *writer
	w       *Watcher
	batches chan PollBatch
}

func newLaneTest(t *testing.T) *laneTest {
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	lt := &laneTest{t: t, batches: make(chan PollBatch, 64)}
	lt.c = newCache(t, s, Config{WakePolled: func(b PollBatch) { lt.batches <- b }})
	lt.wr = newWriter(t, s)
	lt.w = watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}, Lane: true})
	lt.pending() // level
	return lt
}

// put writes an object of namespace a and returns the batch it woke.
func (lt *laneTest) put(name string) PollBatch {
	lt.t.Helper()
	rev := lt.wr.put("a", name, nil)
	waitRev(lt.t, lt.c, rev)
	b := <-lt.batches
	if b.Rev != rev || len(b.Items) != 1 || b.Items[0].Rev != rev || len(b.Lane) != 1 {
		lt.t.Fatalf("the batch of revision %d: Rev %d, %d items, %d lane blocks", rev, b.Rev, len(b.Items), len(b.Lane))
	}
	return b
}

// pending is the watcher's Pending, as revisions.
func (lt *laneTest) pending() []int64 {
	lt.t.Helper()
	items, err := lt.w.Pending(lt.t.Context(), nil)
	if err != nil {
		lt.t.Fatal(err)
	}
	var revs []int64
	for _, it := range items {
		revs = append(revs, it.Rev)
	}
	return revs
}

// serve runs ServeLane on b's block, send answering with n and whole; it
// returns the descriptors sent to and the hand-offs.
func (lt *laneTest) serve(b PollBatch, n int, whole bool, during func()) (sends []int32, handOffs []handOff) {
	b.ServeLane(b.Lane[0], 10, func(fd int32) (int, bool) {
		sends = append(sends, fd)
		if during != nil {
			during()
		}
		return n, whole
	}, func(wk Waker, n int, whole bool) {
		handOffs = append(handOffs, handOff{wk, n, whole})
	})
	return sends, handOffs
}

type handOff struct {
	wk    Waker
	n     int
	whole bool
}

func (lt *laneTest) enter() {
	lt.t.Helper()
	if !lt.w.EnterLane(7) {
		lt.t.Fatal("a level watcher did not enter its lane")
	}
}

// TestLaneSendsEachBatchOnce: a watcher in its lane is sent each batch
// once, by descriptor, without its Pending; out of it (LeaveLane), its
// Pending goes on from the last batch sent, and the lane wakes it instead.
func TestLaneSendsEachBatchOnce(t *testing.T) {
	lt := newLaneTest(t)
	lt.enter()
	if lt.w.EnterLane(7) {
		t.Fatal("a watcher entered its lane twice")
	}
	b1 := lt.put("x")
	if sends, hs := lt.serve(b1, 100, true, nil); len(sends) != 1 || sends[0] != 7 || len(hs) != 0 {
		t.Fatalf("the first batch: sent to %v, %d hand-offs; want one send to 7, none", sends, len(hs))
	}
	if sends, _ := lt.serve(b1, 100, true, nil); len(sends) != 0 {
		t.Fatalf("the same batch again was sent to %v", sends)
	}
	b2 := lt.put("y")
	if !lt.w.LeaveLane() {
		t.Fatal("LeaveLane of a slot no one holds did not leave")
	}
	wk := lt.w.waker.(chanWaker)
	wk.woken()
	if sends, hs := lt.serve(b2, 100, true, nil); len(sends) != 0 || len(hs) != 0 || !wk.woken() {
		t.Fatalf("a batch for a watcher out of its lane: sent to %v, %d hand-offs; want none and a wake", sends, len(hs))
	}
	if got := lt.pending(); len(got) != 1 || got[0] != b2.Rev {
		t.Fatalf("out of its lane, Pending gave %v, want [%d]", got, b2.Rev)
	}
	if got := lt.w.LaneSent(); got != 10 {
		t.Fatalf("LaneSent %d, want 10", got)
	}
}

// TestLaneHandsOver: a slot leaves the lane, its watcher handed over at
// the batch's end, when its send was not whole, when it missed a batch,
// and when its watcher wanted out while held; Pending then gives exactly
// what the lane did not send.
func TestLaneHandsOver(t *testing.T) {
	lt := newLaneTest(t)
	wk := lt.w.waker

	lt.enter()
	b := lt.put("x")
	if sends, hs := lt.serve(b, 5, false, nil); len(sends) != 1 || len(hs) != 1 || hs[0] != (handOff{wk, 5, false}) {
		t.Fatalf("a send not whole: sent to %v, hand-offs %v; want one send, one hand-off of 5 bytes", sends, hs)
	}
	if got := lt.pending(); len(got) != 0 {
		t.Fatalf("after a partial send, Pending gave %v: the batch's rest is the caller's", got)
	}

	lt.enter()
	missed := lt.put("y")
	b = lt.put("z")
	if sends, hs := lt.serve(b, 100, true, nil); len(sends) != 0 || len(hs) != 1 || hs[0] != (handOff{wk, 0, true}) {
		t.Fatalf("a batch after a missed one: sent to %v, hand-offs %v; want no send, one hand-off", sends, hs)
	}
	if got := lt.pending(); len(got) != 2 || got[0] != missed.Rev || got[1] != b.Rev {
		t.Fatalf("after a missed batch, Pending gave %v, want [%d %d]", got, missed.Rev, b.Rev)
	}

	lt.enter()
	b = lt.put("w")
	left := true
	sends, hs := lt.serve(b, 100, true, func() { left = lt.w.LeaveLane() })
	if left || len(sends) != 1 || len(hs) != 1 || hs[0] != (handOff{wk, 100, true}) {
		t.Fatalf("LeaveLane while held: left %v, sent to %v, hand-offs %v; want false, one send, one hand-off", left, sends, hs)
	}
	if got := lt.pending(); len(got) != 0 {
		t.Fatalf("after a hand-off of a whole send, Pending gave %v", got)
	}
	if got := lt.w.LaneSent(); got != 20 {
		t.Fatalf("LaneSent %d, want 20 (two sends that wrote)", got)
	}
}

// TestLaneEnterOnlyLevel: a watcher enters its lane only when level with
// the cache (nothing pending), and one without a lane slot never does.
func TestLaneEnterOnlyLevel(t *testing.T) {
	lt := newLaneTest(t)
	lt.put("x")
	if lt.w.EnterLane(7) {
		t.Fatal("a watcher with an event to take entered its lane")
	}
	lt.pending()
	lt.enter()
	other := watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}})
	if other.EnterLane(8) {
		t.Fatal("a watcher without WatchOptions.Lane entered a lane")
	}
	lt.w.Stop()
	if again := watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}, Lane: true}); again.slot != lt.w.slot {
		t.Fatal("a stopped watcher's slot was not given to the next")
	}
}

// TestLaneParkLeaves: a relist parks a watcher in its lane out of it, so
// that it catches up from the store rather than being sent later batches.
func TestLaneParkLeaves(t *testing.T) {
	lt := newLaneTest(t)
	lt.enter()
	lt.c.mu.Lock()
	lt.w.park()
	lt.c.mu.Unlock()
	if st := lt.w.slot.state.Load(); st != slotOut {
		t.Fatalf("a parked watcher's slot is in state %d, want out", st)
	}
	b := lt.put("x")
	if sends, _ := lt.serve(b, 100, true, nil); len(sends) != 0 {
		t.Fatalf("a parked watcher was sent a batch from its lane: %v", sends)
	}
}
