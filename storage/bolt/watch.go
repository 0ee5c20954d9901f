package bolt

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	bbolt "go.etcd.io/bbolt"

	"github.com/listwatch/listwatch/storage"
)

const (
	// catchUpChunk is how many history records a catching-up watcher reads in
	// one read transaction: short transactions, so that a lagging watcher
	// never holds up bbolt's page reuse or a remap for long.
	catchUpChunk = 1024
	// catchUpChunkBytes bounds a chunk's records in bytes too (one at
	// least), for each is copied out of the transaction and the watcher
	// may have eventsChanLen chunks queued: 1,024 records of 1 KiB, or a
	// single one of the largest values, not 1,024 of those.
	catchUpChunkBytes = 1 << 20
	// eventsChanLen is the capacity, in batches, of a watcher's Events
	// channel: a little slack between the watcher goroutine and its reader.
	eventsChanLen = 4
)

// hub fans the committed events out to the synced watchers.
//
// A watcher is either synced, registered here and fed by publish, or
// catching up, reading the history bucket on its own goroutine. publish
// never blocks: a synced watcher whose buffer would exceed its bound is
// dropped from the hub and catches up from history (etcd's watchable store
// does the same with its synced and unsynced groups).
type hub struct {
	mu sync.Mutex
	// rev is the revision of the latest published event. Guarded by mu.
	rev int64
	// synced are the watchers fed by publish. Guarded by mu.
	synced map[*watcher]struct{}
}

func (h *hub) init(rev int64) {
	h.rev = rev
	h.synced = map[*watcher]struct{}{}
}

// publish hands a committed batch, in revision order, to the synced watchers.
func (h *hub) publish(events []storage.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rev = events[len(events)-1].Revision
	for w := range h.synced {
		n := len(w.pending)
		for i := range events {
			if strings.HasPrefix(events[i].KV.Key, w.prefix) {
				w.pending = append(w.pending, events[i])
			}
		}
		if len(w.pending) > w.s.watchBuffer {
			w.pending, w.overflowed = nil, true
			delete(h.synced, w)
		}
		if len(w.pending) > n || w.overflowed {
			w.wake()
		}
	}
}

// join registers w as synced and returns the revision of the latest event
// published before it joined: every later event will reach w through publish.
func (h *hub) join(w *watcher) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.pending, w.overflowed = nil, false
	h.synced[w] = struct{}{}
	return h.rev
}

// take returns w's waiting events, whether w overflowed since it joined, and
// the revision of the latest event published: unless w overflowed, every
// event up to it under w's prefix is in the result or was taken before.
func (h *hub) take(w *watcher) ([]storage.Event, bool, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := w.pending
	w.pending = nil
	return p, w.overflowed, h.rev
}

func (h *hub) leave(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.synced, w)
}

// watcher is one open watch, run by its own goroutine (owned by the Store,
// stopped by ctx or Close).
type watcher struct {
	s      *Store
	ctx    context.Context
	prefix string
	// prefixBytes is prefix, for matching history records without converting.
	prefixBytes []byte
	out         chan []storage.Event
	notify      chan struct{} // capacity 1: "pending changed"

	// pos is the revision up to which every event under prefix has been read
	// (from history or the hub); all of them have been sent on out except,
	// briefly, the batch being sent. Only the watcher goroutine uses it.
	pos int64
	// progress is pos once everything up to it has been sent. The watcher
	// goroutine stores it; Progress loads it.
	progress atomic.Int64

	// pending and overflowed are guarded by hub.mu: the events published to
	// w and not yet taken, and whether its buffer overflowed.
	pending    []storage.Event
	overflowed bool

	errMu sync.Mutex
	err   error // guarded by errMu; set before out is closed
}

// Watch streams every change under prefix with a revision above fromRevision.
// From 0 it replays the whole history, which fails with storage.ErrCompacted
// once anything has been compacted, as from any revision below the
// compaction revision.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (storage.Watcher, error) {
	if err := storage.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := storage.ValidateRevision(fromRevision); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	compacted := s.compacted.Load()
	if fromRevision < compacted {
		return nil, fmt.Errorf("watch from %d, compacted at %d: %w", fromRevision, compacted, storage.ErrCompacted)
	}
	w := &watcher{
		s:           s,
		ctx:         ctx,
		prefix:      prefix,
		prefixBytes: []byte(prefix),
		out:         make(chan []storage.Event, eventsChanLen),
		notify:      make(chan struct{}, 1),
		pos:         fromRevision,
	}
	w.progress.Store(fromRevision)
	s.watchers.Add(1)
	go w.run()
	return w, nil
}

// Events delivers the batches of events.
func (w *watcher) Events() <-chan []storage.Event { return w.out }

// Err says why the watch ended, once Events is closed.
func (w *watcher) Err() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

var _ storage.ProgressWatcher = (*watcher)(nil)

// Progress returns a revision up to which every event under the prefix has
// been sent on Events. It advances as events are sent, while catching up,
// and, for writes to other prefixes, when RequestProgress is called.
func (w *watcher) Progress() int64 { return w.progress.Load() }

// RequestProgress wakes the watcher so that Progress soon reaches the latest
// published revision. It does not wait.
func (w *watcher) RequestProgress(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.wake()
	return nil
}

func (w *watcher) wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *watcher) run() {
	defer w.s.watchers.Done()
	err := w.loop()
	w.s.hub.leave(w)
	w.errMu.Lock()
	w.err = err
	w.errMu.Unlock()
	close(w.out)
}

// loop alternates catching up from history and live delivery until the watch
// ends, and returns why it ended.
func (w *watcher) loop() error {
	for {
		if err := w.catchUp(); err != nil {
			return err
		}
		if err := w.live(); err != nil {
			return err
		}
	}
}

// catchUp reads history until it is near the head, joins the hub, then reads
// the history published before it joined. It returns once w is synced: no
// event is missed (everything after the join revision comes from the hub)
// and none is sent twice (live skips events at or below pos).
func (w *watcher) catchUp() error {
	for {
		full, err := w.readHistory(math.MaxInt64)
		if err != nil {
			return err
		}
		if !full {
			break
		}
	}
	joined := w.s.hub.join(w)
	for w.pos < joined {
		if _, err := w.readHistory(joined); err != nil {
			return err
		}
	}
	return nil
}

// readHistory sends the events under prefix after pos and at or below upTo,
// at most catchUpChunk of them, read in one short transaction. It reports
// whether it stopped because the chunk was full.
func (w *watcher) readHistory(upTo int64) (full bool, err error) {
	if err := w.stopped(); err != nil {
		return false, err
	}
	var batch []storage.Event
	err = w.s.db.View(func(tx *bbolt.Tx) error {
		batch, full, err = w.readChunk(tx, upTo)
		return err
	})
	if err != nil {
		return false, err
	}
	if err := w.send(batch); err != nil {
		return false, err
	}
	w.progress.Store(w.pos)
	return full, nil
}

// readChunk is readHistory's transaction. It advances pos past what it read.
func (w *watcher) readChunk(tx *bbolt.Tx, upTo int64) ([]storage.Event, bool, error) {
	cur, compacted, err := readMeta(tx)
	if err != nil {
		return nil, false, err
	}
	if w.pos < compacted {
		return nil, false, fmt.Errorf("watch at %d, compacted at %d: %w", w.pos, compacted, storage.ErrCompacted)
	}
	var batch []storage.Event
	c := tx.Bucket(bucketHistory).Cursor()
	n, size := 0, 0 // records read, bytes of those copied
	for k, v := c.Seek(revKey(w.pos + 1)); k != nil; k, v = c.Next() {
		rev, err := decodeRev(k)
		if err != nil {
			return nil, false, err
		}
		if rev > upTo {
			break
		}
		if n == catchUpChunk || size >= catchUpChunkBytes {
			return batch, true, nil
		}
		n++
		w.pos = rev
		key, err := eventKey(v)
		if err != nil {
			return nil, false, err
		}
		if !bytes.HasPrefix(key, w.prefixBytes) {
			continue
		}
		ev, err := decodeEvent(rev, v)
		if err != nil {
			return nil, false, err
		}
		size += len(v)
		batch = append(batch, ev)
	}
	// Everything committed up to min(cur, upTo) has been read.
	w.pos = max(w.pos, min(cur, upTo))
	return batch, false, nil
}

// live sends the events published to w until the watch ends (its error) or
// w's buffer overflows (nil: catch up again).
func (w *watcher) live() error {
	for {
		select {
		case <-w.notify:
		case <-w.ctx.Done():
			return w.ctx.Err()
		case <-w.s.stop:
			return storage.ErrClosed
		}
		pending, overflowed, published := w.s.hub.take(w)
		if err := w.send(w.own(pending)); err != nil {
			return err
		}
		if overflowed {
			w.progress.Store(w.pos)
			return nil
		}
		w.pos = max(w.pos, published)
		w.progress.Store(w.pos)
	}
}

// own drops the events w has already sent and gives w its own copy of the
// values of the others, which all watchers share.
func (w *watcher) own(pending []storage.Event) []storage.Event {
	i := 0
	for i < len(pending) && pending[i].Revision <= w.pos {
		i++
	}
	batch := pending[i:]
	if len(batch) == 0 {
		return nil
	}
	size, prevs := 0, 0
	for i := range batch {
		size += len(batch[i].KV.Value)
		if batch[i].PrevKV != nil {
			size += len(batch[i].PrevKV.Value)
			prevs++
		}
	}
	arena := make([]byte, 0, size)
	prevKVs := make([]storage.KV, 0, prevs)
	for i := range batch {
		ev := &batch[i]
		ev.KV.Value, arena = carve(arena, ev.KV.Value)
		if ev.PrevKV != nil {
			prev := *ev.PrevKV
			prev.Value, arena = carve(arena, prev.Value)
			prevKVs = append(prevKVs, prev)
			ev.PrevKV = &prevKVs[len(prevKVs)-1]
		}
	}
	return batch
}

// carve copies p into arena's spare capacity and returns the copy.
func carve(arena, p []byte) (copied, rest []byte) {
	if p == nil {
		return nil, arena
	}
	n := len(arena)
	arena = append(arena, p...)
	return arena[n:len(arena):len(arena)], arena
}

// send delivers a batch (nothing if empty) and advances pos to its end.
func (w *watcher) send(batch []storage.Event) error {
	if len(batch) == 0 {
		return nil
	}
	select {
	case w.out <- batch:
		w.pos = max(w.pos, batch[len(batch)-1].Revision)
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	case <-w.s.stop:
		return storage.ErrClosed
	}
}

// stopped returns why the watch must end now, if it must.
func (w *watcher) stopped() error {
	select {
	case <-w.ctx.Done():
		return w.ctx.Err()
	case <-w.s.stop:
		return storage.ErrClosed
	default:
		return nil
	}
}
