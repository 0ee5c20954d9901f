package watchstream

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/listwatch/listwatch/internal/lockrank"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// Engine owns the detached watches (detached.go), their goroutines and
// the senders that serve them.
type Engine struct {
	cfg    Config
	ctx    context.Context // ended by Close; catch-ups from the store use it
	cancel context.CancelFunc
	pool   *senderPool    // started with the first watch, so that a server without one runs none
	frames lastFrame      // the event frame the watches share
	wg     sync.WaitGroup // live watches, their readers and own goroutines
	// running counts the goroutines of wg: the watches' readers and
	// dedicated servers (Goroutines).
	running atomic.Int64

	mu sync.Mutex // a leaf
	// guarded by mu:
	live   map[*detachedWatch]struct{}
	closed bool
}

// New returns an engine; Close it to end its watches.
func New(cfg Config) *Engine {
	ctx, cancel := context.WithCancel(context.Background())
	return &Engine{cfg: cfg, ctx: ctx, cancel: cancel, live: map[*detachedWatch]struct{}{}}
}

// senders is the size of the pool: one fewer than the processors, so that
// one is always free for the write path (requests, the store, the cache)
// however many watches an event makes ready.
func senders() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// start registers d and starts its reader, unless close has begun.
func (e *Engine) start(d *detachedWatch) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	if e.pool == nil {
		e.pool = newSenderPool(senders())
	}
	e.live[d] = struct{}{}
	e.wg.Add(1) // done by remove
	if read := d.sink.reader(d); read != nil {
		e.goroutine(read)
	}
	return true
}

// goroutine runs f on a goroutine of the engine's: counted, and waited
// for by Close.
func (e *Engine) goroutine(f func()) {
	e.running.Add(1)
	e.wg.Go(func() {
		defer e.running.Add(-1)
		f()
	})
}

// Goroutines is how many goroutines the engine runs: its senders, and
// each watch's reader and dedicated server (while it has one). An idle
// watch costs one, its reader (none over HTTP/2).
func (e *Engine) Goroutines() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := int(e.running.Load())
	if e.pool != nil {
		n += e.pool.senders
	}
	return n
}

// Watches is how many detached watches are live.
func (e *Engine) Watches() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.live)
}

// remove forgets a finished watch, if start registered it.
func (e *Engine) remove(d *detachedWatch) {
	e.mu.Lock()
	_, ok := e.live[d]
	delete(e.live, d)
	e.mu.Unlock()
	if ok {
		e.wg.Done()
	}
}

// Close ends every detached watch (cleanly: the terminating chunk, its
// writes bounded by EndWriteGrace even if blocked), waits for them and
// their readers (which linger for sockwrite.LingerTimeout at most after the end, for
// clients that do not close: connSink.close) and stops the senders.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	live := make([]*detachedWatch, 0, len(e.live))
	for d := range e.live {
		live = append(live, d)
	}
	pool := e.pool
	e.mu.Unlock()
	e.cancel()
	for _, d := range live {
		d.sink.boundWrites()
		d.end(endShutdown)
	}
	e.wg.Wait()
	if pool != nil {
		pool.close()
	}
}

// WakePolled is the caches' WakePolled: a batch of events wakes the polled
// watches it may concern (those of its namespaces and those of all
// namespaces; watchcache.Config.WakePolled), m counting what they are
// sent. The senders share them out, a slice of senderTake at a time, and
// each wakes and serves its own: the watches' state is then touched by the
// goroutine that sends, not first by the cache's. The watches in the
// group's lane are sent the batch's chunk, a block of the lane at a time
// (laneWriter). It runs under the cache's lock.
func (e *Engine) WakePolled(b *watchcache.PollBatch, m *metrics.Resource) {
	lw := laneWriter{m: m, frames: &e.frames}
	e.mu.Lock()
	pool := e.pool
	e.mu.Unlock()
	if pool == nil { // no watch has started: none is idle, or in a lane
		for _, w := range b.Wakers {
			w.Wake()
		}
		heap := lw // escapes through the LaneWriter: allocated in this rare branch only, not in the common one
		for _, block := range b.Lane {
			b.ServeLane(block, &heap)
		}
		return
	}
	pool.pushAll(b, lw)
}

// laneWriter makes what a lane's slots are sent
// (watchcache.PollBatch.ServeLane, whose slots write to each watch's
// laneConn), and counts it in a resource's metrics.
type laneWriter struct {
	m      *metrics.Resource
	frames *lastFrame // the engine's
}

// Frame is the batch's events as chunks: a batch of one event is the
// frame every watch shares (frame.go).
func (lw *laneWriter) Frame(b *watchcache.PollBatch) ([]byte, int64) {
	return lw.frames.chunks(b.Items)
}

// Sent counts the events of b sent to slots watches.
func (lw *laneWriter) Sent(b *watchcache.PollBatch, slots int) {
	for _, it := range b.Items {
		lw.m.WatchEvents(slots, len(it.Object))
	}
}

// senderPool is a few goroutines serving the detached watches that have
// something pending, in the order they became ready. A watch is queued at
// most once (detachedWatch.state), so a sender that reaches it takes all
// that accumulated meanwhile: the busier the server, the more events each
// write carries.
type senderPool struct {
	wg      sync.WaitGroup
	senders int // its goroutines

	mu lockrank.Mutex[lockrank.SenderPoolMu] // last of the order: internal/lockrank
	// guarded by mu:
	cond   *sync.Cond
	queue  []sendTask
	head   int // queue[head:] are waiting
	closed bool
}

// sendTask is one ready watch, a share of the watches a batch of events
// may concern, or a block of a lane to send a batch (WakePolled).
type sendTask struct {
	d     *detachedWatch
	wakes []watchcache.Waker
	lane  *watchcache.PollBatch
	block *watchcache.LaneBlock
	lw    laneWriter // the lane's
}

// size is the watches t serves.
func (t sendTask) size() int {
	if t.block != nil {
		return watchcache.LaneBlockSlots
	}
	return max(1, len(t.wakes))
}

func newSenderPool(n int) *senderPool {
	p := &senderPool{senders: n}
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

// pushAll queues b's wakers to be woken, in shares of senderTake, and its
// lane to be sent the batch, a block a task, unless the pool is closed (a
// cache may still dispatch after the server's close).
func (p *senderPool) pushAll(b *watchcache.PollBatch, lw laneWriter) {
	p.mu.Lock()
	if !p.closed {
		for ws := b.Wakers; len(ws) > 0; ws = ws[min(len(ws), senderTake):] {
			p.queue = append(p.queue, sendTask{wakes: ws[:min(len(ws), senderTake)]})
		}
		for _, block := range b.Lane {
			p.queue = append(p.queue, sendTask{lane: b, block: block, lw: lw})
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
		for i := range batch {
			t := &batch[i]
			if t.d != nil {
				t.d.serveQueued()
			}
			if t.block != nil {
				t.lane.ServeLane(t.block, &t.lw) // a pointer, not a copy: no allocation
			}
			read += prefetch(t.wakes)
			for _, w := range t.wakes {
				if p, ok := w.(polledWatch); ok {
					p.WakeNow()
				} else {
					w.Wake()
				}
			}
		}
		clear(batch)
	}
}

// prefetched keeps prefetch's reads from being optimised away: each
// sender adds their sum as it ends, not a shared line written per task.
var prefetched atomic.Int64

// prefetch reads the memory that serving ws will read first
// (detachedWatch.Prefetch), so that their cache misses overlap here, and
// returns a value of no use but to keep the reads.
func prefetch(ws []watchcache.Waker) int64 {
	var n int64
	for _, w := range ws {
		if p, ok := w.(polledWatch); ok {
			n += p.Prefetch()
		}
	}
	return n
}

// polledWatch is what the senders do with the Wakers of a PollBatch: the
// engine's watches (detachedWatch), which it gave the cache as their
// WatchOptions.Waker. Any other Waker is only woken.
type polledWatch interface {
	// WakeNow is Wake on a sender, which may serve the watch at once.
	WakeNow()
	// Prefetch reads what serving the watch reads first, so that a
	// sender about to serve many has their cache misses overlap; its
	// result is of no use but to keep the reads.
	Prefetch() int64
}

var _ polledWatch = (*detachedWatch)(nil)

func (p *senderPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
	p.wg.Wait()
}
