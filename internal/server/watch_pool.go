package server

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/sockwrite"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// detachedStreams owns the detached watches (watch_conn.go), their
// goroutines and the senders that serve them.
type detachedStreams struct {
	ctx    context.Context // ended by close; catch-ups from the store use it
	cancel context.CancelFunc
	pool   *senderPool    // started with the first watch, so that a server without one runs none
	frames lastFrame      // the event frame the watches share
	wg     sync.WaitGroup // live watches, their readers and own goroutines

	mu sync.Mutex // a leaf
	// guarded by mu:
	live   map[*detachedWatch]struct{}
	closed bool
}

func newDetachedStreams() *detachedStreams {
	ctx, cancel := context.WithCancel(context.Background())
	return &detachedStreams{ctx: ctx, cancel: cancel, live: map[*detachedWatch]struct{}{}}
}

// senders is the size of the pool: one fewer than the processors, so that
// one is always free for the write path (requests, the store, the cache)
// however many watches an event makes ready.
func senders() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// start registers d and starts its reader, unless close has begun.
func (ds *detachedStreams) start(d *detachedWatch) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.closed {
		return false
	}
	if ds.pool == nil {
		ds.pool = newSenderPool(senders())
	}
	ds.live[d] = struct{}{}
	ds.wg.Add(1) // done by remove
	// A watch on a hijacked connection has a reader of its own; an HTTP/2
	// stream's is its connection's, which ends it.
	if c, ok := d.sink.(*connSink); ok {
		if c.ws != nil {
			ds.wg.Go(d.readWebSocket)
		} else {
			ds.wg.Go(d.watchGone)
		}
	}
	return true
}

// remove forgets a finished watch, if start registered it.
func (ds *detachedStreams) remove(d *detachedWatch) {
	ds.mu.Lock()
	_, ok := ds.live[d]
	delete(ds.live, d)
	ds.mu.Unlock()
	if ok {
		ds.wg.Done()
	}
}

// close ends every detached watch (cleanly: the terminating chunk, its
// writes bounded by endWriteGrace even if blocked), waits for them and
// their readers (which linger for lingerTimeout at most after the end, for
// clients that do not close: connSink.close) and stops the senders.
func (ds *detachedStreams) close() {
	ds.mu.Lock()
	ds.closed = true
	live := make([]*detachedWatch, 0, len(ds.live))
	for d := range ds.live {
		live = append(live, d)
	}
	pool := ds.pool
	ds.mu.Unlock()
	ds.cancel()
	for _, d := range live {
		d.sink.bound()
		d.end(endShutdown)
	}
	ds.wg.Wait()
	if pool != nil {
		pool.close()
	}
}

// wakeAll is the caches' WakePolled: a batch of events wakes the polled
// watches it may concern (those of its namespaces and those of all
// namespaces; watchcache.Config.WakePolled), m counting what they are
// sent. The senders share them out, a slice of senderTake at a time, and
// each wakes and serves its own: the watches' state is then touched by the
// goroutine that sends, not first by the cache's. The watches in the
// group's lane are sent the batch's chunk, a block of the lane at a time
// (laneBatch). It runs under the cache's lock.
func (ds *detachedStreams) wakeAll(b watchcache.PollBatch, m *metrics.Resource) {
	var lb *laneBatch
	if len(b.Lane) > 0 {
		lb = &laneBatch{b: b, m: m}
		lb.chunk, lb.body = ds.frames.chunks(b.Items)
	}
	ds.mu.Lock()
	pool := ds.pool
	ds.mu.Unlock()
	if pool == nil { // no watch has started: none is idle, or in a lane
		for _, w := range b.Wakers {
			w.Wake()
		}
		for _, block := range b.Lane {
			lb.serve(block)
		}
		return
	}
	pool.pushAll(b.Wakers, lb)
}

// laneBatch is a batch of events for the watches of a poll group's lane:
// the chunk each is sent, made once.
type laneBatch struct {
	b     watchcache.PollBatch
	chunk []byte // the items, a chunk each
	body  int64  // their bytes, without the chunk framing
	m     *metrics.Resource
}

// serve sends the batch to a block of the lane: one write of the chunk to
// each watch in the lane that lacks only it. A watch that leaves the lane
// is served as any other (handOff).
func (lb *laneBatch) serve(block *[watchcache.LaneBlock]watchcache.LaneSlot) {
	sent := lb.b.ServeLane(block, lb.body, lb.send, lb.handOff)
	for range sent {
		for _, it := range lb.b.Items {
			lb.m.WatchEvent(len(it.Object))
		}
	}
}

// send writes the chunk to a watch's socket without waiting.
func (lb *laneBatch) send(fd int32) (int, bool) {
	n, err := sockwrite.Write(uintptr(fd), lb.chunk)
	switch {
	case err == nil:
		return n, n == len(lb.chunk)
	case errors.Is(err, sockwrite.ErrWouldBlock):
		return 0, false
	}
	return -1, false
}

// handOff takes a watch that left the lane: the rest of a chunk its socket
// did not take whole (n bytes of it written) goes to its sink, a write
// error ends it, and it is served by the senders (its own goroutine, if
// stalled).
func (lb *laneBatch) handOff(wk watchcache.Waker, n int, whole bool) {
	d := wk.(*detachedWatch)
	switch {
	case n < 0:
		d.end(endGone)
		return
	case !whole:
		d.sink.(*connSink).rest = net.Buffers{lb.chunk[n:]}
	}
	d.mu.Lock()
	d.handedLocked()
	d.mu.Unlock()
}

// senderPool is a few goroutines serving the detached watches that have
// something pending, in the order they became ready. A watch is queued at
// most once (detachedWatch.state), so a sender that reaches it takes all
// that accumulated meanwhile: the busier the server, the more events each
// write carries.
type senderPool struct {
	wg sync.WaitGroup

	mu sync.Mutex // a leaf
	// guarded by mu:
	cond   *sync.Cond
	queue  []sendTask
	head   int // queue[head:] are waiting
	closed bool
}

// sendTask is one ready watch, a share of the watches a batch of events
// may concern, or a block of a lane to send a batch (wakeAll).
type sendTask struct {
	d     *detachedWatch
	wakes []watchcache.Waker
	lane  *laneBatch
	block *[watchcache.LaneBlock]watchcache.LaneSlot
}

// size is the watches t serves.
func (t sendTask) size() int {
	if t.block != nil {
		return len(t.block)
	}
	return max(1, len(t.wakes))
}

func newSenderPool(n int) *senderPool {
	p := &senderPool{}
	p.cond = sync.NewCond(&p.mu)
	for range n {
		p.wg.Go(p.run)
	}
	return p
}

// push queues d to be served, unless the pool is closed (every watch has
// finished then).
func (p *senderPool) push(d *detachedWatch) {
	p.mu.Lock()
	if !p.closed {
		p.queue = append(p.queue, sendTask{d: d})
	}
	p.mu.Unlock()
	p.cond.Signal()
}

// pushAll queues ws to be woken, in shares of senderTake, and lb's lane
// (if lb is not nil) to be sent its batch, a block a task, unless the pool
// is closed (a cache may still dispatch after the server's close).
func (p *senderPool) pushAll(ws []watchcache.Waker, lb *laneBatch) {
	p.mu.Lock()
	for i := 0; i < len(ws) && !p.closed; i += senderTake {
		p.queue = append(p.queue, sendTask{wakes: ws[i:min(len(ws), i+senderTake)]})
	}
	if lb != nil && !p.closed {
		for _, block := range lb.b.Lane {
			p.queue = append(p.queue, sendTask{lane: lb, block: block})
		}
	}
	p.mu.Unlock()
	p.cond.Broadcast()
}

// senderTake is how many ready watches a sender takes at once: fewer
// turns of the pool's lock, and still a share of the queue for each of the
// other senders.
const senderTake = 32

// take waits for tasks and appends to buf those serving up to senderTake
// watches (one at least); it returns buf empty once the pool is closed.
func (p *senderPool) take(buf []sendTask) []sendTask {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.head == len(p.queue) && !p.closed {
		p.cond.Wait()
	}
	end, n := p.head, 0
	for end < len(p.queue) && n < senderTake {
		n += p.queue[end].size()
		end++
	}
	buf = append(buf, p.queue[p.head:end]...)
	clear(p.queue[p.head:end])
	p.head = end
	if p.head == len(p.queue) || p.head > 2*(len(p.queue)-p.head) { // reuse the array from its start
		n := copy(p.queue, p.queue[p.head:])
		clear(p.queue[n:])
		p.queue, p.head = p.queue[:n], 0
	}
	return buf
}

func (p *senderPool) run() {
	var batch []sendTask
	var read int64 // prefetch's reads, kept by one store at the end
	defer func() { prefetched.Add(read) }()
	for {
		batch = p.take(batch[:0])
		if len(batch) == 0 {
			return
		}
		for _, t := range batch {
			if t.d != nil {
				t.d.serveQueued()
			}
			if t.block != nil {
				t.lane.serve(t.block)
			}
			read += prefetch(t.wakes)
			for _, w := range t.wakes {
				w.(*detachedWatch).serveWoken()
			}
		}
		clear(batch)
	}
}

// prefetched keeps prefetch's reads from being optimised away: each
// sender adds their sum as it ends, not a shared line written per task.
var prefetched atomic.Int64

// prefetch reads the memory that serving ws will read first
// (detachedWatch.prefetch), so that their cache misses overlap here, and
// returns a value of no use but to keep the reads.
func prefetch(ws []watchcache.Waker) int64 {
	var n int64
	for _, w := range ws {
		n += w.(*detachedWatch).prefetch()
	}
	return n
}

func (p *senderPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
	p.wg.Wait()
}
