package watchcache

import (
	"runtime"
	"sync/atomic"
)

// A lane holds the polled watchers of a poll group that the caller of
// Config.WakePolled serves without touching them: the watches the server
// writes on their socket's descriptor. Each such watcher (WatchOptions.Lane)
// has a slot in its group's lane, dense blocks of LaneBlock slots, for its
// whole life. A slot in the lane is level with the cache at every batch
// it has been given: a batch that wakes the group hands the caller the
// lane with the batch's items as the group sees them (PollBatch), and the
// caller sends them to each slot in the lane (ServeLane), moving its
// position, with no lock and no read of the watcher. Anything else (a
// catch-up, a write the socket did not take whole, a bookmark, the end)
// takes the slot out of the lane, its position back to its watcher, which
// is then served through Pending as any polled watcher, until it enters
// again (EnterLane).

// LaneBlock is how many slots a block of a lane holds.
const LaneBlock = 32

// A slot's states.
const (
	slotVacant uint32 = iota // no watcher
	slotOut                  // its watcher is served through Pending, woken by each batch
	slotIn                   // in the lane, level: batches are sent from the slot
	slotBusy                 // a ServeLane holds it
	slotWanted               // held, and wanted out: the holder hands it over
)

// LaneSlot is one watcher's place in its group's lane.
type LaneSlot struct {
	state atomic.Uint32
	fd    int32 // the caller's handle of the watcher (EnterLane)
	// pos and sent are written by whoever holds the slot (ServeLane), or
	// the watcher while the slot is out.
	pos  int64 // every event the watcher sees up to pos has been sent
	sent int64 // bytes sent from the lane since the watcher started
	w    atomic.Pointer[Watcher]
}

// lane is a poll group's slots. Its blocks never move, so a batch's
// caller may keep them; slots are taken and given back under the cache's
// lock.
type lane struct {
	blocks []*[LaneBlock]LaneSlot
	free   []*LaneSlot
}

// take gives w a slot, out of the lane. c.mu held for writing.
func (l *lane) take(w *Watcher) *LaneSlot {
	if len(l.free) == 0 {
		b := new([LaneBlock]LaneSlot)
		l.blocks = append(l.blocks, b)
		for i := LaneBlock - 1; i >= 0; i-- { // the block's first slot first
			l.free = append(l.free, &b[i])
		}
	}
	s := l.free[len(l.free)-1]
	l.free = l.free[:len(l.free)-1]
	s.pos, s.sent = 0, 0
	s.w.Store(w)
	s.state.Store(slotOut)
	return s
}

// give frees s, once out of the lane: a holder finishes first (it never
// waits: ServeLane's send must not block). c.mu held for writing.
func (l *lane) give(s *LaneSlot) {
	for !s.state.CompareAndSwap(slotIn, slotOut) && s.state.Load() != slotOut {
		runtime.Gosched()
	}
	s.w.Store(nil)
	s.state.Store(slotVacant)
	l.free = append(l.free, s)
}

// PollBatch is what a batch of events hands Config.WakePolled, for one
// poll group that it concerns.
type PollBatch struct {
	// Wakers are the group's polled watchers without a lane slot: wake
	// each.
	Wakers []Waker
	// Lane is the group's lane (ServeLane each block), with Items, the
	// batch's events as its watchers see them (at least one), and Rev,
	// the batch's last revision. Prev is the group's previous batch's: a
	// slot at it or after it, and before Items, lacks Items alone.
	Lane      []*[LaneBlock]LaneSlot
	Items     []Item
	Prev, Rev int64
}

// ServeLane serves block's slots for the batch. To each slot in the lane
// that lacks only the batch's items, send(fd) sends them: it must not
// block, and it returns the bytes it wrote (-1 for an error that ends the
// watch) and whether that was the whole of the items; bodyBytes are added
// to the slot's count (LaneSent) for each send that wrote. A slot that
// must leave the lane (a send not whole, a position the batch does not
// continue, a watcher that wanted out meanwhile) leaves it at the batch's
// end and is handed over (handOff(its watcher's Waker, n, whole): n and
// whole as send returned them, 0 and true without a send); the caller
// then serves it through Pending. A slot out of the lane has its watcher
// woken. It returns how many sends were whole.
func (b *PollBatch) ServeLane(block *[LaneBlock]LaneSlot, bodyBytes int64, send func(fd int32) (int, bool), handOff func(wk Waker, n int, whole bool)) int {
	whole := 0
	for i := range block {
		s := &block[i]
		if !b.claim(s) {
			continue
		}
		n, ok, sent := 0, true, false
		switch {
		case s.pos >= b.Rev: // given the batch when it entered
		case s.pos < b.Prev || s.pos >= b.Items[0].Rev: // missed a batch: the ring has it
			ok = false
		default:
			n, ok = send(s.fd)
			sent = true
			if n >= 0 {
				s.sent += bodyBytes
				s.pos = b.Rev // a rest not written is the caller's
			}
			if ok {
				whole++
			}
		}
		if ok && s.state.CompareAndSwap(slotBusy, slotIn) {
			continue
		}
		w := s.leave()
		if !sent {
			n, ok = 0, true
		}
		handOff(w.waker, n, ok)
	}
	return whole
}

// claim takes s for a send if it is in the lane. One held by another
// ServeLane is marked wanted, since that one may not give it this batch;
// one out of the lane has its watcher woken.
func (b *PollBatch) claim(s *LaneSlot) bool {
	for {
		switch st := s.state.Load(); st {
		case slotIn:
			if s.state.CompareAndSwap(slotIn, slotBusy) {
				return true
			}
		case slotBusy:
			if s.state.CompareAndSwap(slotBusy, slotWanted) {
				return false
			}
		case slotOut:
			if w := s.w.Load(); w != nil {
				w.waker.Wake()
			}
			return false
		default: // vacant, or wanted already
			return false
		}
	}
}

// leave takes a held slot out of the lane, its position back to its
// watcher, and returns the watcher.
func (s *LaneSlot) leave() *Watcher {
	w := s.w.Load()
	w.lock()
	w.pos = s.pos
	w.unlock()
	s.state.Store(slotOut)
	return w
}

// EnterLane puts the watcher in its lane, as handle fd, if it has a slot
// (WatchOptions.Lane) out of the lane and is level with the cache: nothing
// queued, not parked or ended. Batches are then sent from the slot by the
// caller of Config.WakePolled (ServeLane), until LeaveLane or a hand-off.
func (w *Watcher) EnterLane(fd int32) bool {
	s := w.slot
	if s == nil {
		return false
	}
	c := w.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	w.lock()
	defer w.unlock()
	if w.parked || w.err != nil || len(w.queue) > 0 || w.pos < c.rev || s.state.Load() != slotOut {
		return false
	}
	s.fd, s.pos = fd, w.pos
	s.state.Store(slotIn)
	return true
}

// LeaveLane takes the watcher's slot out of its lane, its position back to
// the watcher, and reports whether it is out: false if a ServeLane holds
// it, which hands the watcher over (its handOff) as it is done. A watcher
// without a slot is out.
func (w *Watcher) LeaveLane() bool {
	s := w.slot
	if s == nil {
		return true
	}
	for {
		switch st := s.state.Load(); st {
		case slotIn:
			if s.state.CompareAndSwap(slotIn, slotBusy) {
				s.leave()
				return true
			}
		case slotBusy:
			if s.state.CompareAndSwap(slotBusy, slotWanted) {
				return false
			}
		case slotWanted:
			return false
		default: // out (or vacant: stopped)
			return true
		}
	}
}

// LaneSent returns the bytes sent to the watcher from its lane (ServeLane's
// bodyBytes). Call it once the watcher is out of the lane.
func (w *Watcher) LaneSent() int64 {
	if w.slot == nil {
		return 0
	}
	return w.slot.sent
}
