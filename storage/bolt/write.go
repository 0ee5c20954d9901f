package bolt

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/listwatch/listwatch/storage"
)

// errCommitPanicked answers the requests of a batch whose commit panicked:
// whether it was applied is unknown.
var errCommitPanicked = errors.New("bolt: commit panicked; the write may or may not have been applied")

// errStoreFailed answers every call after a commit panicked once written
// (commit): the store cannot tell what it holds; reopen it.
var errStoreFailed = errors.New("bolt: a commit panicked after writing; the store must be reopened")

// maxBatch caps the requests committed in one transaction, as etcd's
// backend caps a batch at 10,000 operations: it bounds the transaction's
// size and the latency of the callers at its head.
const maxBatch = 10000

type opKind uint8

const (
	opCreate opKind = iota + 1
	opUpdate
	opDelete
)

// request is one write waiting for a commit (its caller's own or another's).
type request struct {
	ctx      context.Context
	op       opKind
	key      string
	value    []byte // owned by the request (copied from the caller)
	expected int64  // expected ModRevision for update and delete; 0: any
	res      chan result
}

// result answers a request. For a delete, prev is the deleted state.
type result struct {
	rev  int64
	prev storage.KV
	err  error
}

// Create stores value at key and returns the new revision.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := validateWrite(key, value); err != nil {
		return 0, err
	}
	r := s.do(ctx, &request{op: opCreate, key: key, value: append([]byte{}, value...)})
	return r.rev, r.err
}

// Update replaces key's value if its ModRevision is expectedModRevision (0:
// any) and returns the new revision.
func (s *Store) Update(ctx context.Context, key string, expectedModRevision int64, value []byte) (int64, error) {
	if err := validateWrite(key, value); err != nil {
		return 0, err
	}
	if err := storage.ValidateRevision(expectedModRevision); err != nil {
		return 0, err
	}
	r := s.do(ctx, &request{op: opUpdate, key: key, value: append([]byte{}, value...), expected: expectedModRevision})
	return r.rev, r.err
}

// Delete removes key if its ModRevision is expectedModRevision (0: any) and
// returns the deleted state and the new revision.
func (s *Store) Delete(ctx context.Context, key string, expectedModRevision int64) (storage.KV, int64, error) {
	if err := storage.ValidateKey(key); err != nil {
		return storage.KV{}, 0, err
	}
	if err := storage.ValidateRevision(expectedModRevision); err != nil {
		return storage.KV{}, 0, err
	}
	r := s.do(ctx, &request{op: opDelete, key: key, expected: expectedModRevision})
	return r.prev, r.rev, r.err
}

func validateWrite(key string, value []byte) error {
	if err := storage.ValidateKey(key); err != nil {
		return err
	}
	return storage.ValidateValue(value)
}

// do queues r and waits for its answer or ctx. If no commit is under way,
// the caller commits the queue itself (r and whatever others queued
// meanwhile, as one batch): a lone write is not handed to another
// goroutine and back, each hand-off waking a thread (~6% of a lone PUT's
// server CPU, docs/PERFORMANCE.md). Requests queued during a commit are
// left to the writer goroutine, which the committer wakes when it is done,
// so that a caller waits for its own batch only. A request whose ctx ends
// before a commit takes it is not applied; one whose ctx ends while its
// batch commits may have been applied (as with etcd, the outcome is then
// unknown to the caller).
func (s *Store) do(ctx context.Context, r *request) result {
	if err := s.begin(ctx); err != nil {
		return result{err: err}
	}
	r.ctx = ctx
	r.res = make(chan result, 1)
	s.queueMu.Lock()
	s.queue = append(s.queue, r)
	lead := !s.committing
	s.committing = true
	s.queueMu.Unlock()
	if lead {
		s.lead() // ends the call too
	} else {
		s.end()
	}
	select {
	case res := <-r.res:
		return res
	case <-ctx.Done():
		return result{err: ctx.Err()}
	}
}

// lead commits the batch of a caller that took the committer's turn, then
// ends the turn and the call (s.end), even if the commit panics (net/http
// recovers a handler's panic: the store must not stay without a committer,
// nor Close wait for the call for ever). Its caller holds closeMu's read
// side, so Close waits for the commit.
func (s *Store) lead() {
	defer s.end()
	defer s.handOver()
	s.commitBatch(make([]*request, 0, 1), false)
}

// writer commits the requests queued while another commit was under way,
// when the committer hands them over, until Close stops it through quit.
func (s *Store) writer() {
	defer close(s.writerDone)
	batch := make([]*request, 0, maxBatch)
	for {
		select {
		case <-s.kick:
			for s.commitBatch(batch[:0], true) {
			}
			s.handOver()
		case <-s.quit:
			s.rejectQueued()
			return
		}
	}
}

// commitBatch takes the queued requests into batch, as fill does, and
// commits them; it reports whether there were any. The caller must hold
// the committer's turn (committing).
func (s *Store) commitBatch(batch []*request, yield bool) bool {
	batch = s.fill(batch, yield)
	if len(batch) == 0 {
		return false
	}
	s.commit(batch)
	clear(batch)
	return true
}

// fill adds to batch the requests queued, up to maxBatch. If yield is set,
// when the queue looks empty it yields once before giving up: the callers
// answered by the previous commit are runnable but may not have queued
// their next request yet, and waiting for them a few microseconds saves a
// whole fsync. A caller that took a free turn does not yield: no commit
// answered anyone just before, and runtime.Gosched wakes an idle P, which
// often runs the yielding caller on the other core; that cost a lone
// write about as much as the hand-off it saved.
func (s *Store) fill(batch []*request, yield bool) []*request {
	yielded := !yield
	for len(batch) < maxBatch {
		s.queueMu.Lock()
		n := min(len(s.queue), maxBatch-len(batch))
		batch = append(batch, s.queue[:n]...)
		rest := copy(s.queue, s.queue[n:])
		clear(s.queue[rest:])
		s.queue = s.queue[:rest]
		s.queueMu.Unlock()
		switch {
		case n > 0:
			yielded = !yield
		case yielded:
			return batch
		default:
			runtime.Gosched()
			yielded = true
		}
	}
	return batch
}

// handOver ends the committer's turn: it gives the turn to the writer
// goroutine if requests were queued during the last commit, else frees it.
func (s *Store) handOver() {
	s.queueMu.Lock()
	more := len(s.queue) > 0
	s.committing = more
	s.queueMu.Unlock()
	if more {
		s.kick <- struct{}{}
	}
}

// rejectQueued answers the requests left in the queue when the store closes.
func (s *Store) rejectQueued() {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	for _, r := range s.queue {
		r.res <- result{err: storage.ErrClosed}
	}
	clear(s.queue)
	s.queue = s.queue[:0]
}

// commit applies batch in one transaction. A request that fails its own
// checks (conflict, absent or existing key, ended ctx) gets its error and
// consumes no revision; the others go on. A failure of the transaction itself
// fails every request of the batch, and nothing of it is applied. If it
// panics, every request not yet answered gets errCommitPanicked first, so
// that when a caller's commit panics (lead) the others of its batch do not
// wait for their contexts; and if the panic came once the transaction's
// commit had begun, the store fails (errStoreFailed): the file, the
// revision and the watchers may disagree, and net/http recovers a caller's
// panic, which would let writes go on from a wrong revision.
func (s *Store) commit(batch []*request) {
	answered := false
	s.commitBegun = false
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if s.commitBegun {
			s.failed.Store(true)
		}
		if !answered {
			for _, r := range batch {
				select {
				case r.res <- result{err: errCommitPanicked}:
				default: // answered already
				}
			}
		}
		panic(p)
	}()
	results := make([]result, len(batch))
	events := make([]storage.Event, 0, len(batch))
	rev := s.rev.Load()
	err := s.update(len(batch), func(tx *bbolt.Tx) error {
		w := newBatchTx(tx, s.arena)
		defer func() {
			if cap(w.arena) <= maxArena {
				s.arena = w.arena
			}
		}()
		for i, r := range batch {
			ev, err := w.apply(r, rev+1)
			var reqErr *requestError
			switch {
			case errors.As(err, &reqErr):
				results[i].err = reqErr.err
				continue
			case err != nil:
				return err
			}
			rev++
			events = append(events, ev)
			results[i] = result{rev: rev}
			if ev.PrevKV != nil {
				// The caller owns what it is given; the event's copy goes to watchers.
				results[i].prev = *ev.PrevKV
				results[i].prev.Value = append([]byte{}, ev.PrevKV.Value...)
			}
		}
		return w.setRevision(rev)
	})
	if err != nil {
		err = fmt.Errorf("bolt: commit: %w", err)
		for i := range results {
			results[i] = result{err: err}
		}
		events = nil
	} else {
		s.rev.Store(rev)
	}
	for i, r := range batch {
		r.res <- results[i]
	}
	answered = true
	if len(events) > 0 {
		s.hub.publish(events)
	}
}

// update runs fn in a write transaction and commits it, as bbolt's
// DB.Update does, but times the commit alone (fn's work excluded) for the
// CommitObserver, to which batch is passed on.
func (s *Store) update(batch int, fn func(*bbolt.Tx) error) error {
	tx, err := s.db.Begin(true)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	// If fn fails or panics; after Commit, which ends tx, a no-op.
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return err
	}
	start := time.Now()
	s.commitBegun = true
	err = tx.Commit()
	if s.observer != nil {
		s.observer.Committed(time.Since(start), batch)
	}
	return err
}

// requestError is a failure of one request that leaves the rest of the batch
// unaffected.
type requestError struct{ err error }

func (e *requestError) Error() string { return e.err.Error() }

// batchTx applies requests to one write transaction.
type batchTx struct {
	kv, history, meta *bbolt.Bucket
	// arena holds the values put in the transaction, which bbolt reads
	// until it commits: one buffer that the committers reuse from batch to
	// batch, instead of two allocations per write (garbage is a large part
	// of a create's cost). Growing it moves it; what was put stays valid.
	arena []byte
}

// maxArena bounds the arena the store keeps between batches.
const maxArena = 4 << 20

// historyFillPercent packs history pages: its keys only ever grow, so a
// page is never split to take an insert in the middle (etcd fills its
// revision-keyed bucket to 90% for the same reason).
const historyFillPercent = 0.9

func newBatchTx(tx *bbolt.Tx, arena []byte) *batchTx {
	w := &batchTx{kv: tx.Bucket(bucketKV), history: tx.Bucket(bucketHistory), meta: tx.Bucket(bucketMeta), arena: arena[:0]}
	w.history.FillPercent = historyFillPercent
	return w
}

// apply checks r against the state in the transaction (which includes the
// earlier requests of the batch) and, if it holds, writes it at rev.
func (w *batchTx) apply(r *request, rev int64) (storage.Event, error) {
	if err := r.ctx.Err(); err != nil {
		return storage.Event{}, &requestError{err}
	}
	prev, err := w.current(r.key)
	if err != nil {
		return storage.Event{}, err
	}
	if err := check(r, prev); err != nil {
		return storage.Event{}, &requestError{err}
	}
	ev := storage.Event{Type: storage.EventPut, Revision: rev, PrevKV: prev}
	switch r.op {
	case opCreate:
		ev.KV = storage.KV{Key: r.key, Value: r.value, CreateRevision: rev, ModRevision: rev}
	case opUpdate:
		ev.KV = storage.KV{Key: r.key, Value: r.value, CreateRevision: prev.CreateRevision, ModRevision: rev}
	case opDelete:
		ev.Type = storage.EventDelete
		ev.KV = storage.KV{Key: r.key, ModRevision: rev}
	}
	return ev, w.write(&ev)
}

// current returns the state of key in the transaction, or nil.
func (w *batchTx) current(key string) (*storage.KV, error) {
	v := w.kv.Get([]byte(key))
	if v == nil {
		return nil, nil
	}
	kv, err := decodeKV(key, v)
	if err != nil {
		return nil, err
	}
	return &kv, nil
}

// check returns the error r gets against the key's state prev (nil: absent).
func check(r *request, prev *storage.KV) error {
	switch {
	case r.op == opCreate && prev != nil:
		return fmt.Errorf("create %q: %w", r.key, storage.ErrKeyExists)
	case r.op != opCreate && prev == nil:
		return fmt.Errorf("write %q: %w", r.key, storage.ErrNotFound)
	case r.op != opCreate && r.expected != 0 && r.expected != prev.ModRevision:
		return &storage.ConflictError{Key: r.key, Expected: r.expected, Current: *prev}
	}
	return nil
}

// write records ev in the current state and the history.
func (w *batchTx) write(ev *storage.Event) error {
	key := []byte(ev.KV.Key)
	var err error
	if ev.Type == storage.EventDelete {
		err = w.kv.Delete(key)
	} else {
		start := len(w.arena)
		w.arena = appendKV(w.arena, ev.KV.CreateRevision, ev.Revision, ev.KV.Value)
		err = w.kv.Put(key, w.arena[start:len(w.arena):len(w.arena)])
	}
	if err != nil {
		return fmt.Errorf("write state of %q: %w", ev.KV.Key, err)
	}
	start := len(w.arena)
	w.arena = appendEvent(w.arena, ev)
	if err := w.history.Put(revKey(ev.Revision), w.arena[start:len(w.arena):len(w.arena)]); err != nil {
		return fmt.Errorf("write history at %d: %w", ev.Revision, err)
	}
	return nil
}

func (w *batchTx) setRevision(rev int64) error {
	if err := w.meta.Put(metaRevision, revKey(rev)); err != nil {
		return fmt.Errorf("write revision: %w", err)
	}
	return nil
}
