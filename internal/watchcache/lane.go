package watchcache

import (
	"sync/atomic"

	"github.com/listwatch/listwatch/internal/lockrank"
)

// A lane holds the polled watchers of a poll group that the caller of
// Config.WakePolled serves without touching them: each is sent a batch
// through its LaneSink, the caller's end of its connection. Each such
// watcher (WatchOptions.Lane)
// has a slot in its group's lane, dense blocks of LaneBlock slots, for its
// whole life. A slot in the lane is level with the cache at every batch
// it has been given: a batch that wakes the group hands the caller the
// lane with the batch's items as the group sees them (PollBatch), and the
// caller sends them to each slot in the lane (ServeLane), moving its
// position, with no lock of the cache's and no read of the watcher. Anything else (a
// catch-up, a write the socket did not take whole, a bookmark, the end)
// takes the slot out of the lane, its position back to its watcher, which
// is then served through Pending as any polled watcher, until it enters
// again (EnterLane).

// LaneBlockSlots is how many slots a block of a lane holds (a sender's
// share of a batch: internal/watchstream).
const LaneBlockSlots = 32

// LaneBlock is a block of a lane's slots, served by one ServeLane at a
// time (serving). The slots come first: a block's allocation starts on a
// cache line.
type LaneBlock struct {
	slots [LaneBlockSlots]LaneSlot
	// serving is taken after Cache.mu (a WakePolled may serve the lane
	// itself) and before what ServeLane takes: Watcher.mu, and the
	// LaneSink's and LaneWriter's locks.
	serving lockrank.Mutex[lockrank.LaneBlockServing]
	// frames is what ServeLane sends the slots, held by serving: in the
	// block, not on ServeLane's stack, which a LaneSink's SendNow would
	// move to the heap at each call.
	frames [maxChain][]byte
}

// A slot's states.
const (
	slotVacant    uint32 = iota // no watcher
	slotOut                     // its watcher is served through Pending, woken by each batch
	slotIn                      // in the lane, level: batches are sent from the slot
	slotBusy                    // a ServeLane holds it
	slotWantedOut               // held, and wanted out: the holder hands it over
	slotStopped                 // held, its watcher stopped: the holder lets it go (give)
)

// LaneSlot is one watcher's place in its group's lane.
type LaneSlot struct {
	state atomic.Uint32
	out   LaneSink // where its batches go (EnterLane)
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
	blocks []*LaneBlock
	free   []*LaneSlot
	// stopped are the slots given back while held (slotStopped), free
	// once their holder has let them go.
	stopped []*LaneSlot
	last    *PollBatch // the latest batch handed over, to link the next to
}

// take gives w a slot, out of the lane. c.mu held for writing.
func (l *lane) take(w *Watcher) *LaneSlot {
	if len(l.stopped) > 0 {
		l.freeStopped()
	}
	if len(l.free) == 0 {
		b := new(LaneBlock)
		l.blocks = append(l.blocks, b)
		for i := LaneBlockSlots - 1; i >= 0; i-- { // the block's first slot first
			l.free = append(l.free, &b.slots[i])
		}
	}
	s := l.free[len(l.free)-1]
	l.free = l.free[:len(l.free)-1]
	s.pos, s.sent = 0, 0
	s.w.Store(w)
	s.state.Store(slotOut)
	return s
}

// give frees s, or, if a ServeLane holds it, leaves it to its holder to
// let go, without waiting (its watcher is not handed over then). c.mu
// held for writing.
func (l *lane) give(s *LaneSlot) {
	for { // again only if the slot changed meanwhile: a claim, a hand-over
		switch st := s.state.Load(); st {
		case slotBusy, slotWantedOut:
			if s.state.CompareAndSwap(st, slotStopped) {
				l.stopped = append(l.stopped, s)
				return
			}
		default: // in or out
			if s.state.CompareAndSwap(st, slotVacant) {
				s.release()
				l.free = append(l.free, s)
				return
			}
		}
	}
}

// freeStopped frees the stopped slots that their holders have let go.
// c.mu held for writing.
func (l *lane) freeStopped() {
	held := l.stopped[:0]
	for _, s := range l.stopped {
		if s.state.Load() == slotVacant {
			l.free = append(l.free, s)
		} else {
			held = append(held, s)
		}
	}
	clear(l.stopped[len(held):])
	l.stopped = held
}

// release forgets the slot's watcher and lets its sink go: no ServeLane
// holds the slot, and none will for this watcher. The slot is another's
// next.
func (s *LaneSlot) release() {
	s.w.Store(nil)
	if s.out != nil {
		s.out.Release()
		s.out = nil
	}
}

// PollBatch is what a batch of events hands Config.WakePolled, for one
// poll group that it concerns.
type PollBatch struct {
	// Wakers are the group's polled watchers without a lane slot: wake
	// each (they are the WatchOptions.Waker values given).
	Wakers []Waker
	// Lane is the group's lane (ServeLane each block), with Items, the
	// batch's events as its watchers see them (at least one), and Rev,
	// the batch's last revision. Prev is the group's previous batch's: a
	// slot at it or after it, and before Items, lacks this batch and the
	// ones linked after it (next).
	Lane      []*LaneBlock
	Items     []Item
	Prev, Rev int64
	// next is the group's next batch, once WakePolled has returned for
	// it: a sender behind sends a slot the batches after its own too, in
	// one write.
	next atomic.Pointer[PollBatch]
}

// maxChain bounds the batches ServeLane sends a slot in one write.
const maxChain = 32

// LaneSink is the caller's end of a watcher in its lane: the connection
// its batches are written to.
type LaneSink interface {
	// SendNow writes frames without waiting, and reports whether it wrote
	// them whole; what it did not write it keeps (while ServeLane still
	// holds the slot), for the watcher's next write to start with. An
	// error ends the watch.
	SendNow(frames [][]byte) (whole bool, err error)
	// Release is called once, when the watcher has stopped and no
	// ServeLane holds its slot: no SendNow follows. It may run under the
	// cache's lock (Watcher.Stop), so it must not wait.
	Release()
	// HandOff is told that the watcher's slot has left the lane: the
	// watcher is to be served through Pending (failed: its SendNow
	// failed).
	HandOff(failed bool)
}

// LaneWriter is the caller's side of ServeLane: what a slot is sent, and
// what is counted of it.
type LaneWriter interface {
	// Frame returns what a slot that lacks b is sent for it (its Items),
	// and the bytes of it that LaneSent counts. It must stay valid after
	// ServeLane: a LaneSink may keep what it did not write.
	Frame(b *PollBatch) ([]byte, int64)
	// Sent counts the slots that were sent b (or all its bytes were kept).
	Sent(b *PollBatch, slots int)
}

// ServeLane serves block's slots for the batch: each slot in the lane
// that lacks it is sent, in one SendNow, its frame (lw.Frame) and those of the group's
// batches after it (as many as were handed over since, maxChain in all at
// most), and its position moves to the last one's; a slot that has the
// batch is skipped (the task of the first batch it lacks sends it the
// rest, so that a sender behind sends each slot many batches at once). A
// slot leaves the lane, its watcher handed over (LaneSink.HandOff), when its
// SendNow did not write everything (the rest kept by its sink), when its
// position is one the batches do not continue (the ring has what it
// lacks), or when its watcher wanted out while it was held. A slot out of
// the lane has its watcher woken. A block served by another ServeLane (a
// task of another batch, on another sender) is waited for: its sends do
// not block, and that one may be sending this batch too.
func (b *PollBatch) ServeLane(block *LaneBlock, lw LaneWriter) {
	block.serving.Lock()
	defer block.serving.Unlock()
	var chainBuf [maxChain]*PollBatch
	chain := b.chain(chainBuf[:0])
	var frames [][]byte // made for the first slot that lacks them
	var body int64      // what they count in LaneSent
	last := chain[len(chain)-1].Rev
	sends := 0 // that wrote: their events are the watchers'
	for i := range block.slots {
		s := &block.slots[i]
		if !claim(s) {
			continue
		}
		ok, failed := true, false
		switch {
		case s.pos >= b.Rev: // entered after it, or sent it with an earlier batch's: a later batch's task sends it the rest
		case s.pos < b.Prev || s.pos >= b.Items[0].Rev: // missed a batch: the ring has it
			ok = false
		default:
			if frames == nil {
				frames = block.frames[:0]
				for _, c := range chain {
					f, n := lw.Frame(c)
					frames = append(frames, f)
					body += n
				}
			}
			whole, err := s.out.SendNow(frames)
			if failed = err != nil; failed {
				ok = false
				break
			}
			ok = whole
			s.sent += body
			s.pos = last
			sends++
		}
		if ok && s.state.CompareAndSwap(slotBusy, slotIn) {
			continue
		}
		if out := s.out; s.leave() { // out: the watcher's own, until its slot is vacant
			out.HandOff(failed)
		}
	}
	if sends > 0 {
		for _, c := range chain {
			lw.Sent(c, sends)
		}
	}
	clear(frames) // the batches' bytes are not the block's to keep
}

// chain appends b and the group's batches after it, maxChain at most. Each
// continues the one before (a lane's blocks never go, so every batch of
// its group is linked): the test is a check, not a case.
func (b *PollBatch) chain(buf []*PollBatch) []*PollBatch {
	buf = append(buf, b)
	for c := b.next.Load(); c != nil && len(buf) < maxChain && c.Prev == buf[len(buf)-1].Rev; c = c.next.Load() {
		buf = append(buf, c)
	}
	return buf
}

// claim takes s for a send if it is in the lane; one out of the lane has
// its watcher woken, one being taken out (LeaveLane) is skipped.
func claim(s *LaneSlot) bool {
	for {
		switch s.state.Load() {
		case slotIn:
			if s.state.CompareAndSwap(slotIn, slotBusy) {
				return true
			}
		case slotOut:
			if w := s.w.Load(); w != nil {
				w.waker.Wake()
			}
			return false
		default: // vacant, or being taken out
			return false
		}
	}
}

// leave takes a held slot out of the lane, its position back to its
// watcher, and reports true; or, if the watcher has stopped, lets the slot
// go (vacant, for its lane to free) and reports false.
func (s *LaneSlot) leave() bool {
	w := s.w.Load()
	w.lock()
	w.pos = s.pos
	w.unlock()
	for { // again only if the watcher wanted out, or stopped, meanwhile
		switch st := s.state.Load(); st {
		case slotStopped:
			s.release()
			s.state.Store(slotVacant)
			return false
		default: // busy or wanted
			if s.state.CompareAndSwap(st, slotOut) {
				return true
			}
		}
	}
}

// EnterLane puts the watcher in its lane, its batches sent to out, if it has a slot
// (WatchOptions.Lane) out of the lane and is level with the cache: nothing
// queued, not parked or ended. Batches are then sent from the slot by the
// caller of Config.WakePolled (ServeLane), until LeaveLane or a hand-off.
func (w *Watcher) EnterLane(out LaneSink) bool {
	c := w.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := w.slot.Load() // under c.mu: not stopped meanwhile
	if s == nil {
		return false
	}
	w.lock()
	defer w.unlock()
	if w.parked || w.err != nil || len(w.queue) > 0 || w.pos < c.rev || s.state.Load() != slotOut {
		return false
	}
	s.out, s.pos = out, w.pos
	s.state.Store(slotIn)
	return true
}

// LeaveLane takes the watcher's slot out of its lane, its position back to
// the watcher, and reports whether it is out: false if a ServeLane holds
// it, which hands the watcher over (LaneSink.HandOff) as it is done. A watcher
// without a slot, or stopped, is out. It reads the slot without the
// cache's lock, so it must not race the watcher's Stop (whose slot may
// then be the next watcher's): its caller serves the watch, and stops it
// only after.
func (w *Watcher) LeaveLane() bool {
	s := w.slot.Load()
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
			if s.state.CompareAndSwap(slotBusy, slotWantedOut) {
				return false
			}
		case slotWantedOut:
			return false
		default: // out (or vacant: stopped)
			return true
		}
	}
}

// LaneSent returns the bytes sent to the watcher from its lane (what
// LaneWriter.Frame counted of each batch sent). Call it once the watcher
// is out of the lane, before Stop.
func (w *Watcher) LaneSent() int64 {
	s := w.slot.Load()
	if s == nil {
		return 0
	}
	return s.sent
}
