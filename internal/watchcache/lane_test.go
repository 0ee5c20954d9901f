package watchcache

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/storage/memory"
)

// laneTest is a cache whose batches are captured, with one laned watcher
// of namespace a.
type laneTest struct {
	t       *testing.T
	c       *Cache
	wr      *writer
	w       *Watcher
	sink    *testSink // w's
	batches chan *PollBatch
}

func newLaneTest(t *testing.T) *laneTest {
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	lt := &laneTest{t: t, batches: make(chan *PollBatch, 64), sink: &testSink{}}
	lt.c = newCache(t, s, Config{WakePolled: func(b *PollBatch) { lt.batches <- b }})
	lt.wr = newWriter(t, s)
	lt.w = watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}, Lane: true})
	lt.pending() // level
	return lt
}

// put writes an object of namespace a and returns the batch it woke.
func (lt *laneTest) put(name string) *PollBatch {
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

// serve runs ServeLane on b's block, each SendNow writing n bytes (all of
// them if n is -2, failing if -1); during runs in the first SendNow. It
// returns the frames of each SendNow and the hand-offs.
func (lt *laneTest) serve(b *PollBatch, n int, during func()) *testWriter {
	tw := &testWriter{n: n, during: during}
	lt.sink.serving.Store(tw)
	b.ServeLane(b.Lane[0], tw)
	return tw
}

// testSink is the laned watcher's LaneSink: each SendNow is the latest
// serve's testWriter's.
type testSink struct {
	serving  atomic.Pointer[testWriter]
	released int // Release's calls
}

func (ts *testSink) SendNow(frames [][]byte) (bool, error) {
	return ts.serving.Load().SendNow(frames)
}

func (ts *testSink) Release() { ts.released++ }

func (ts *testSink) HandOff(failed bool) {
	tw := ts.serving.Load()
	tw.handOffs = append(tw.handOffs, handOff{failed})
}

// testWriter is a LaneWriter, and the sends and hand-offs of one serve,
// recording what it is asked.
type testWriter struct {
	n        int
	during   func()
	sends    [][]string // the frames of each Send
	kept     []string
	handOffs []handOff
	sent     map[int64]int // slots, by batch revision
}

func (tw *testWriter) SendNow(frames [][]byte) (bool, error) {
	var fs []string
	var all string
	for _, f := range frames {
		fs = append(fs, string(f))
		all += string(f)
	}
	tw.sends = append(tw.sends, fs)
	if tw.during != nil {
		tw.during()
		tw.during = nil
	}
	switch {
	case tw.n == -1:
		return false, errors.New("the connection failed")
	case tw.n == -2 || tw.n >= len(all):
		return true, nil
	}
	tw.kept = append(tw.kept, all[tw.n:])
	return false, nil
}

// frameOf is what a slot is sent for b.
func frameOf(b *PollBatch) string { return fmt.Sprintf("frame of %d", b.Rev) }

// Frame sends frameOf each batch, counting 10 bytes.
func (tw *testWriter) Frame(b *PollBatch) ([]byte, int64) { return []byte(frameOf(b)), 10 }

func (tw *testWriter) Sent(b *PollBatch, slots int) {
	if tw.sent == nil {
		tw.sent = map[int64]int{}
	}
	tw.sent[b.Rev] += slots
}

type handOff struct{ failed bool }

func (lt *laneTest) enter() {
	lt.t.Helper()
	if !lt.w.EnterLane(lt.sink) {
		lt.t.Fatal("a level watcher did not enter its lane")
	}
}

// TestLaneSendsEachBatchOnce: a watcher in its lane is sent each batch
// once, without its Pending; out of it (LeaveLane), its Pending goes on
// from the last batch sent, and the lane wakes it instead.
func TestLaneSendsEachBatchOnce(t *testing.T) {
	lt := newLaneTest(t)
	lt.enter()
	if lt.w.EnterLane(lt.sink) {
		t.Fatal("a watcher entered its lane twice")
	}
	b1 := lt.put("x")
	if tw := lt.serve(b1, -2, nil); len(tw.sends) != 1 || tw.sends[0][0] != frameOf(b1) || len(tw.handOffs) != 0 || tw.sent[b1.Rev] != 1 {
		t.Fatalf("the first batch: sends %v, hand-offs %v, counted %v; want one send of %q, none, 1", tw.sends, tw.handOffs, tw.sent, frameOf(b1))
	}
	if tw := lt.serve(b1, -2, nil); len(tw.sends) != 0 {
		t.Fatalf("the same batch again was sent: %v", tw.sends)
	}
	b2 := lt.put("y")
	if !lt.w.LeaveLane() {
		t.Fatal("LeaveLane of a slot no one holds did not leave")
	}
	wk := lt.w.waker.(chanWaker)
	wk.woken()
	if tw := lt.serve(b2, -2, nil); len(tw.sends) != 0 || len(tw.handOffs) != 0 || !wk.woken() {
		t.Fatalf("a batch for a watcher out of its lane: sends %v, hand-offs %v; want none and a wake", tw.sends, tw.handOffs)
	}
	if got := lt.pending(); len(got) != 1 || got[0] != b2.Rev {
		t.Fatalf("out of its lane, Pending gave %v, want [%d]", got, b2.Rev)
	}
	if got := lt.w.LaneSent(); got != 10 {
		t.Fatalf("LaneSent %d, want 10", got)
	}
}

// TestLaneCoalesces: a slot behind by several batches of its group is
// sent them all in one Send, from the first batch's task; the later
// batches' tasks skip it.
func TestLaneCoalesces(t *testing.T) {
	lt := newLaneTest(t)
	lt.enter()
	b1, b2, b3 := lt.put("x"), lt.put("y"), lt.put("z")
	tw := lt.serve(b1, -2, nil)
	if len(tw.sends) != 1 || len(tw.sends[0]) != 3 || tw.sends[0][2] != frameOf(b3) || len(tw.handOffs) != 0 {
		t.Fatalf("three batches behind: sends %v, hand-offs %v; want one send of the three frames", tw.sends, tw.handOffs)
	}
	if tw.sent[b1.Rev] != 1 || tw.sent[b2.Rev] != 1 || tw.sent[b3.Rev] != 1 {
		t.Fatalf("counted %v, want each batch once", tw.sent)
	}
	for _, b := range []*PollBatch{b2, b3} {
		if tw := lt.serve(b, -2, nil); len(tw.sends) != 0 {
			t.Fatalf("batch %d's task sent again: %v", b.Rev, tw.sends)
		}
	}
	if got := lt.w.LaneSent(); got != 30 {
		t.Fatalf("LaneSent %d, want 30", got)
	}
	lt.w.LeaveLane()
	if got := lt.pending(); len(got) != 0 {
		t.Fatalf("after the lane sent everything, Pending gave %v", got)
	}
}

// TestLaneHandsOver: a slot leaves the lane, its watcher handed over at
// the batch's end, when its send was not whole (the rest kept), when it
// failed, when it missed a batch, and when its watcher wanted out while
// held; Pending then gives exactly what the lane did not send.
func TestLaneHandsOver(t *testing.T) {
	lt := newLaneTest(t)

	lt.enter()
	b := lt.put("x")
	tw := lt.serve(b, 1, nil)
	if len(tw.sends) != 1 || len(tw.kept) != 1 || tw.kept[0] != frameOf(b)[1:] || len(tw.handOffs) != 1 || tw.handOffs[0] != (handOff{false}) || tw.sent[b.Rev] != 1 {
		t.Fatalf("a send not whole: sends %v, kept %q, hand-offs %v, counted %v; want one send, its rest kept, one hand-off, 1", tw.sends, tw.kept, tw.handOffs, tw.sent)
	}
	if got := lt.pending(); len(got) != 0 {
		t.Fatalf("after a partial send, Pending gave %v: the batch's rest is the caller's", got)
	}

	lt.enter()
	b = lt.put("v")
	if tw := lt.serve(b, -1, nil); len(tw.handOffs) != 1 || tw.handOffs[0] != (handOff{true}) || len(tw.kept) != 0 || tw.sent != nil {
		t.Fatalf("a failed send: hand-offs %v, kept %q, counted %v; want one failed hand-off, nothing kept or counted", tw.handOffs, tw.kept, tw.sent)
	}
	lt.pending() // the stream would end; its position is the watcher's again

	lt.enter()
	missed := lt.put("y")
	b = lt.put("z")
	if tw := lt.serve(b, -2, nil); len(tw.sends) != 0 || len(tw.handOffs) != 1 || tw.handOffs[0] != (handOff{false}) {
		t.Fatalf("a batch after a missed one: sends %v, hand-offs %v; want none, one hand-off", tw.sends, tw.handOffs)
	}
	if got := lt.pending(); len(got) != 2 || got[0] != missed.Rev || got[1] != b.Rev {
		t.Fatalf("after a missed batch, Pending gave %v, want [%d %d]", got, missed.Rev, b.Rev)
	}

	lt.enter()
	b = lt.put("w")
	left := true
	tw = lt.serve(b, -2, func() { left = lt.w.LeaveLane() })
	if left || len(tw.sends) != 1 || len(tw.handOffs) != 1 || tw.handOffs[0] != (handOff{false}) {
		t.Fatalf("LeaveLane while held: left %v, sends %v, hand-offs %v; want false, one send, one hand-off", left, tw.sends, tw.handOffs)
	}
	if got := lt.pending(); len(got) != 0 {
		t.Fatalf("after a hand-off of a whole send, Pending gave %v", got)
	}
	if got := lt.w.LaneSent(); got != 20 {
		t.Fatalf("LaneSent %d, want 20 (the two sends that wrote)", got)
	}
}

// TestLaneEnterOnlyLevel: a watcher enters its lane only when level with
// the cache (nothing pending), and one without a lane slot never does;
// its sink is released once it stops.
func TestLaneEnterOnlyLevel(t *testing.T) {
	lt := newLaneTest(t)
	lt.put("x")
	if lt.w.EnterLane(lt.sink) {
		t.Fatal("a watcher with an event to take entered its lane")
	}
	lt.pending()
	lt.enter()
	other := watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}})
	if other.EnterLane(&testSink{}) {
		t.Fatal("a watcher without WatchOptions.Lane entered a lane")
	}
	slot := lt.w.slot.Load()
	lt.w.Stop()
	if lt.sink.released != 1 {
		t.Fatalf("a stopped watcher's sink was released %d times, want once", lt.sink.released)
	}
	if again := watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}, Lane: true}); again.slot.Load() != slot {
		t.Fatal("a stopped watcher's slot was not given to the next")
	}
}

// TestLaneStopLetsTheSlotGo: a stopped watcher has no slot: its slot, given
// to the next watcher of its lane, is that one's alone, and the stopped
// watcher's EnterLane, LeaveLane and LaneSent neither take it nor read it.
func TestLaneStopLetsTheSlotGo(t *testing.T) {
	lt := newLaneTest(t)
	lt.enter()
	slot := lt.w.slot.Load()
	// keeps the group, and its lane, once lt.w stops
	watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}})
	lt.w.Stop()
	next := watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}, Lane: true})
	if next.slot.Load() != slot {
		t.Fatal("the stopped watcher's slot was not given to the next")
	}
	if lt.w.EnterLane(&testSink{}) {
		t.Fatal("a stopped watcher entered its lane, in the slot of the next")
	}
	nextSink := &testSink{}
	if _, err := next.Pending(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if !next.EnterLane(nextSink) {
		t.Fatal("the next watcher, level, did not enter its lane")
	}
	if !lt.w.LeaveLane() {
		t.Fatal("a stopped watcher is not out of its lane")
	}
	if st := slot.state.Load(); st != slotIn || slot.out != nextSink {
		t.Fatalf("the next watcher's slot is in state %d with sink %p after the stopped one's LeaveLane, want in with %p", st, slot.out, nextSink)
	}
	if sent := lt.w.LaneSent(); sent != 0 {
		t.Fatalf("a stopped watcher's LaneSent is %d, want 0", sent)
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
	if st := lt.w.slot.Load().state.Load(); st != slotOut {
		t.Fatalf("a parked watcher's slot is in state %d, want out", st)
	}
	b := lt.put("x")
	if tw := lt.serve(b, -2, nil); len(tw.sends) != 0 {
		t.Fatalf("a parked watcher was sent a batch from its lane: %v", tw.sends)
	}
}

// TestLaneChainsAcrossNamespaces: a namespace group's batches link across
// other namespaces' batches (Prev is its own previous batch), and a chain
// stops at maxChain, the next task sending the rest.
func TestLaneChainsAcrossNamespaces(t *testing.T) {
	lt := newLaneTest(t)
	lt.enter()
	b1 := lt.put("x")
	lt.wr.put("b", "other", nil) // wakes no lane of namespace a
	b2 := lt.put("y")
	if b2.Prev != b1.Rev {
		t.Fatalf("the batch after another namespace's has Prev %d, want the group's previous batch %d", b2.Prev, b1.Rev)
	}
	if tw := lt.serve(b1, -2, nil); len(tw.sends) != 1 || len(tw.sends[0]) != 2 || len(tw.handOffs) != 0 {
		t.Fatalf("two batches around another namespace's: sends %v, hand-offs %v; want one send of both", tw.sends, tw.handOffs)
	}
	var bs []*PollBatch
	for i := range maxChain + 3 {
		bs = append(bs, lt.put(fmt.Sprint("z", i)))
	}
	if tw := lt.serve(bs[0], -2, nil); len(tw.sends) != 1 || len(tw.sends[0]) != maxChain {
		t.Fatalf("%d batches behind: sends of %d frames, want one of %d", len(bs), len(tw.sends[0]), maxChain)
	}
	for _, b := range bs[1:maxChain] {
		if tw := lt.serve(b, -2, nil); len(tw.sends) != 0 {
			t.Fatalf("batch %d, sent with the first, was sent again", b.Rev)
		}
	}
	if tw := lt.serve(bs[maxChain], -2, nil); len(tw.sends) != 1 || len(tw.sends[0]) != 3 || len(tw.handOffs) != 0 {
		t.Fatalf("the batches past maxChain: sends %v, hand-offs %v; want one send of 3", tw.sends, tw.handOffs)
	}
	lt.w.LeaveLane()
	if got := lt.pending(); len(got) != 0 {
		t.Fatalf("after the lane sent everything, Pending gave %v", got)
	}
}

// TestLaneBlockServedOnce: a block served for one batch is not served for
// the next until the first is done, so that the second does not take its
// slots out of the lane while the first sends them both.
func TestLaneBlockServedOnce(t *testing.T) {
	lt := newLaneTest(t)
	lt.enter()
	b1, b2 := lt.put("x"), lt.put("y")
	inSend, release := make(chan struct{}), make(chan struct{})
	done := make(chan *testWriter)
	go func() {
		done <- lt.serve(b1, -2, func() { close(inSend); <-release })
	}()
	<-inSend
	second := make(chan *testWriter)
	go func() { second <- lt.serve(b2, -2, nil) }()
	select {
	case <-second:
		t.Fatal("the block was served for the second batch while the first was sending")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if tw := <-done; len(tw.sends) != 1 || len(tw.sends[0]) != 2 {
		t.Fatalf("the first batch's task: sends %v, want one of both batches", tw.sends)
	}
	if tw := <-second; len(tw.sends) != 0 || len(tw.handOffs) != 0 {
		t.Fatalf("the second batch's task: sends %v, hand-offs %v; want none", tw.sends, tw.handOffs)
	}
}

// TestLaneStopWhileHeld: a watcher stopped while a ServeLane holds its
// slot (in its send: after a whole send, a partial one, or a LeaveLane)
// stops without waiting for the holder, which lets the slot go without
// handing the watcher over, and releases its sink then (not before);
// the next watcher of the lane gets the slot.
func TestLaneStopWhileHeld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		wanted bool
	}{{"whole", -2, false}, {"partial", 1, false}, {"wanted", -2, true}} {
		t.Run(tc.name, func(t *testing.T) {
			lt := newLaneTest(t)
			lt.enter()
			slot := lt.w.slot.Load()
			// keeps the group, and its lane, once lt.w stops
			watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}})
			b := lt.put("x")
			tw := lt.serve(b, tc.n, func() {
				if tc.wanted && lt.w.LeaveLane() {
					t.Error("LeaveLane of a held slot left")
				}
				stopped := make(chan struct{}) // on a goroutine of its own: the cache's lock is taken before the block's
				go func() { lt.w.Stop(); close(stopped) }()
				<-stopped
				if lt.sink.released != 0 {
					t.Error("the sink was released while a ServeLane held its slot")
				}
			})
			if lt.sink.released != 1 {
				t.Fatalf("the sink was released %d times after its holder let the slot go, want once", lt.sink.released)
			}
			if len(tw.sends) != 1 || len(tw.handOffs) != 0 {
				t.Fatalf("sends %v, hand-offs %v; want one send, no hand-off of a stopped watcher", tw.sends, tw.handOffs)
			}
			if st := slot.state.Load(); st != slotVacant {
				t.Fatalf("the stopped watcher's slot is in state %d after its holder, want vacant", st)
			}
			again := watchPolled(t, lt.c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}, Lane: true})
			if again.slot.Load() != slot {
				t.Fatal("the slot let go by its holder was not given to the next watcher")
			}
		})
	}
}
