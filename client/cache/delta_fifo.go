package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/listwatch/listwatch/client"
)

// ErrFIFOClosed is returned by Pop once the DeltaFIFO is closed.
var ErrFIFOClosed = errors.New("DeltaFIFO: closed")

// DeltaType says what happened to an object.
type DeltaType string

// The delta types.
const (
	Added   DeltaType = "Added"
	Updated DeltaType = "Updated"
	Deleted DeltaType = "Deleted"
	// Replaced is an object listed by a relist (Replace); whether it changed
	// is for the consumer to tell from what it had.
	Replaced DeltaType = "Replaced"
	// Sync is a known object re-queued by a periodic resync.
	Sync DeltaType = "Sync"
)

// Delta is one change of one object.
type Delta[T any] struct {
	Type   DeltaType
	Object T
	// FinalStateUnknown marks a Deleted delta that Replace made for a key
	// missing from a relist: the deletion happened while the watch was
	// down, and Object is the last state known, which may be stale. It is
	// client-go's DeletedFinalStateUnknown{Key, Obj}, typed.
	FinalStateUnknown bool
}

// Deltas are the changes of one object, oldest first.
type Deltas[T any] []Delta[T]

// Newest returns the last delta; ok is false if there are none.
func (d Deltas[T]) Newest() (delta Delta[T], ok bool) {
	if len(d) == 0 {
		return delta, false
	}
	return d[len(d)-1], true
}

// KnownObjects is what a DeltaFIFO needs of the store its consumer keeps:
// the keys and objects it holds, to emit deletions on Replace and to resync.
// *Indexer implements it.
type KnownObjects[T any] interface {
	ListKeys() []string
	GetByKey(key string) (T, bool)
}

var _ KnownObjects[client.Object] = (*Indexer[client.Object])(nil)

// DeltaFIFOOptions configure a DeltaFIFO.
type DeltaFIFOOptions[T any] struct {
	// KeyFunc keys objects; required.
	KeyFunc KeyFunc[T]
	// KnownObjects is the consumer's store; required for Replace to detect
	// deletions of popped objects and for Resync.
	KnownObjects KnownObjects[T]
	// Transform, if set, is applied to every object entering the queue
	// through Add, Update and Replace (not Delete, Sync or final-state-
	// unknown deletions, which carry objects already transformed).
	Transform func(T) T
	// OnSynced, if set, is called once, with the FIFO's lock held, when
	// HasSynced becomes true: after the first Replace's batch has been
	// popped and processed.
	OnSynced func()
}

// DeltaFIFO is a queue of keys, each with the deltas of its object since it
// was last popped. A producer (the Reflector) adds deltas; one consumer pops
// a key with all its deltas and applies them to its store (KnownObjects)
// while holding the FIFO's lock, so Replace and Resync never see the store
// half-way through a pop.
//
// Deltas of a key accumulate in order; the only merge is of two consecutive
// Deleted deltas, where the one with more information wins (a deletion seen
// on the watch over a final-state-unknown one from a relist).
type DeltaFIFO[T any] struct {
	keyFunc  KeyFunc[T]
	known    KnownObjects[T]
	onSynced func()
	wake     chan struct{} // buffered 1: a key was queued or the FIFO closed

	mu        sync.Mutex
	transform func(T) T            // guarded by mu
	items     map[string]Deltas[T] // guarded by mu; the keys in queue
	queue     []string             // guarded by mu; FIFO order, each key once
	// populated is set by the first Replace or Add; initialCount is how many
	// keys of the first Replace (and of its parts) are still to be popped.
	populated    bool // guarded by mu
	initialCount int  // guarded by mu
	closed       bool // guarded by mu
	// A list in parts (BeginReplace, ReplacePart, then EndReplace): listing
	// holds the keys listed so far, to find the deletions at its end; it
	// is nil when no list is in progress, or when the list began on an
	// empty FIFO and store, where it can delete nothing (listingFresh)
	// until something not listed is queued (recordListingLocked).
	listing      map[string]struct{} // guarded by mu
	listingFresh bool                // guarded by mu
	// The parts of a list begun on an empty FIFO and store, as long as
	// nothing else has been queued since: their keys (distinct in a list)
	// are queued here without an entry in items, each popped as its one
	// Replaced delta (a slice of bulkDeltas), ahead of queue, which is
	// empty meanwhile. Any other change first moves them to items and
	// queue (spillLocked), and ends bulk.
	bulk       bool      // guarded by mu
	bulkKeys   []string  // guarded by mu
	bulkDeltas Deltas[T] // guarded by mu; bulkDeltas[i] is bulkKeys[i]'s
}

// NewDeltaFIFO returns an empty DeltaFIFO.
func NewDeltaFIFO[T any](opts DeltaFIFOOptions[T]) *DeltaFIFO[T] {
	return &DeltaFIFO[T]{
		keyFunc:   opts.KeyFunc,
		known:     opts.KnownObjects,
		transform: opts.Transform,
		onSynced:  opts.OnSynced,
		wake:      make(chan struct{}, 1),
		items:     map[string]Deltas[T]{},
	}
}

// setTransform replaces the transform; the informer calls it before start.
func (f *DeltaFIFO[T]) setTransform(t func(T) T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.transform = t
}

// Add queues an Added delta.
func (f *DeltaFIFO[T]) Add(obj T) { f.queueAction(Added, obj) }

// Update queues an Updated delta.
func (f *DeltaFIFO[T]) Update(obj T) { f.queueAction(Updated, obj) }

// Delete queues a Deleted delta.
func (f *DeltaFIFO[T]) Delete(obj T) { f.queueAction(Deleted, obj) }

func (f *DeltaFIFO[T]) queueAction(t DeltaType, obj T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spillLocked()
	f.recordListingLocked()
	f.populated = true
	f.queueLocked(f.keyFunc(obj), Delta[T]{Type: t, Object: f.transformLocked(t, obj)})
}

func (f *DeltaFIFO[T]) transformLocked(t DeltaType, obj T) T {
	if f.transform == nil || t == Deleted || t == Sync {
		return obj
	}
	return f.transform(obj)
}

// queueLocked appends d to key's deltas, queueing key if it is new.
func (f *DeltaFIFO[T]) queueLocked(key string, d Delta[T]) {
	deltas, queued := f.items[key]
	f.items[key] = dedupDeletes(append(deltas, d))
	if !queued {
		f.queue = append(f.queue, key)
		f.signal()
	}
}

// dedupDeletes merges the last two deltas if both are deletions, keeping
// the one with more information.
func dedupDeletes[T any](d Deltas[T]) Deltas[T] {
	n := len(d)
	if n < 2 || d[n-1].Type != Deleted || d[n-2].Type != Deleted {
		return d
	}
	if d[n-1].FinalStateUnknown {
		return d[:n-1]
	}
	d[n-2] = d[n-1]
	return d[:n-1]
}

func (f *DeltaFIFO[T]) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Replace queues a Replaced delta for each object of a relist and a
// final-state-unknown Deleted delta for every key, queued or known to the
// consumer's store, that the list does not have. resourceVersion is the
// list's; the FIFO does not use it. A list in parts still in progress is
// abandoned.
func (f *DeltaFIFO[T]) Replace(list []T, resourceVersion string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spillLocked()
	f.listing, f.listingFresh = nil, false
	listed := make(map[string]struct{}, len(list))
	f.queueListedLocked(list, listed)
	f.endListLocked(listed)
}

// BeginReplace starts a list that arrives in parts: ReplacePart queues
// each page's objects as it arrives, so that the consumer applies them
// while the next pages are read, and EndReplace ends the list as Replace
// ends one. Beginning again (or a Replace) abandons an unfinished list:
// its deltas stay queued, and the next list's end deletes what that list
// does not have. HasSynced does not become true before the first list
// ends.
func (f *DeltaFIFO[T]) BeginReplace() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spillLocked()
	f.listing, f.listingFresh = map[string]struct{}{}, false
	if len(f.items) == 0 && (f.known == nil || len(f.known.ListKeys()) == 0) {
		// Only this list's objects (and resyncs of them) can be queued or
		// known at its end: there is nothing it could delete.
		f.listing, f.listingFresh, f.bulk = nil, true, true
	}
}

// ReplacePart queues a Replaced delta for each of objs, part of the list
// begun by BeginReplace.
func (f *DeltaFIFO[T]) ReplacePart(objs []T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listing == nil && !f.listingFresh { // not begun: begin now
		f.listing = map[string]struct{}{}
	}
	if f.bulk {
		for _, obj := range objs {
			f.bulkKeys = append(f.bulkKeys, f.keyFunc(obj))
			f.bulkDeltas = append(f.bulkDeltas, Delta[T]{Type: Replaced, Object: f.transformLocked(Replaced, obj)})
		}
		if len(objs) > 0 {
			f.signal()
		}
	} else {
		f.spillLocked()
		f.queueListedLocked(objs, f.listing)
	}
	if !f.populated {
		f.initialCount = f.lenLocked() // all of the first list's
	}
}

// spillLocked moves the keys queued in bulk to items and queue, and ends
// bulk.
func (f *DeltaFIFO[T]) spillLocked() {
	for i, key := range f.bulkKeys {
		f.queueLocked(key, f.bulkDeltas[i])
	}
	f.bulk, f.bulkKeys, f.bulkDeltas = false, nil, nil
}

// recordListingLocked makes a list in parts begun on an empty FIFO and
// store record its keys, before something that is not its own is queued:
// until then, whatever is queued or known was listed by it.
func (f *DeltaFIFO[T]) recordListingLocked() {
	if !f.listingFresh {
		return
	}
	f.listing, f.listingFresh = make(map[string]struct{}, len(f.items)), false
	for key := range f.items {
		f.listing[key] = struct{}{}
	}
	if f.known != nil {
		for _, key := range f.known.ListKeys() {
			f.listing[key] = struct{}{}
		}
	}
}

// lenLocked is the number of queued keys.
func (f *DeltaFIFO[T]) lenLocked() int { return len(f.bulkKeys) + len(f.queue) }

// EndReplace ends the list begun by BeginReplace, whose parts are the
// whole state: it queues the deletions of what they did not list. Without
// a list begun, it ends an empty one.
func (f *DeltaFIFO[T]) EndReplace(resourceVersion string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	listed, fresh := f.listing, f.listingFresh
	f.listing, f.listingFresh, f.bulk = nil, false, false
	if fresh {
		f.endListLocked(nil)
		return
	}
	if listed == nil {
		listed = map[string]struct{}{}
	}
	f.spillLocked()
	f.endListLocked(listed)
}

// endListLocked queues the deletions of what a list did not have (none
// when listed is nil: the list began on an empty FIFO and store) and marks
// the FIFO populated.
func (f *DeltaFIFO[T]) endListLocked(listed map[string]struct{}) {
	if listed != nil {
		f.deleteMissingLocked(listed)
	}
	if !f.populated {
		f.populated = true
		f.initialCount = f.lenLocked()
		f.checkSyncedLocked()
	}
}

// queueListedLocked queues a Replaced delta for each object of a list,
// recording its key in listed unless listed is nil.
func (f *DeltaFIFO[T]) queueListedLocked(objs []T, listed map[string]struct{}) {
	for _, obj := range objs {
		key := f.keyFunc(obj)
		if listed != nil {
			listed[key] = struct{}{}
		}
		f.queueLocked(key, Delta[T]{Type: Replaced, Object: f.transformLocked(Replaced, obj)})
	}
}

// deleteMissingLocked queues final-state-unknown deletions of every queued
// or known key not in listed.
func (f *DeltaFIFO[T]) deleteMissingLocked(listed map[string]struct{}) {
	for key, deltas := range f.items {
		if _, ok := listed[key]; ok {
			continue
		}
		newest, _ := deltas.Newest()
		f.queueLocked(key, Delta[T]{Type: Deleted, Object: newest.Object, FinalStateUnknown: true})
	}
	if f.known == nil {
		return
	}
	for _, key := range f.known.ListKeys() {
		if _, ok := listed[key]; ok {
			continue
		}
		if _, queued := f.items[key]; queued {
			continue
		}
		if obj, ok := f.known.GetByKey(key); ok {
			f.queueLocked(key, Delta[T]{Type: Deleted, Object: obj, FinalStateUnknown: true})
		}
	}
}

// Resync queues a Sync delta for every known object whose key is not
// already queued (a queued key will deliver a newer state anyway).
func (f *DeltaFIFO[T]) Resync() {
	if f.known == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spillLocked()
	for _, key := range f.known.ListKeys() {
		if _, queued := f.items[key]; queued {
			continue
		}
		if obj, ok := f.known.GetByKey(key); ok {
			f.queueLocked(key, Delta[T]{Type: Sync, Object: obj})
		}
	}
}

// Pop waits for a key and calls process with its deltas, holding the FIFO's
// lock: process must not call the FIFO, and should be quick. isInInitialList
// is true for the keys of the first Replace. Pop returns ErrFIFOClosed once
// the FIFO is closed, or ctx's error. Only one goroutine may Pop.
func (f *DeltaFIFO[T]) Pop(ctx context.Context, process func(deltas Deltas[T], isInInitialList bool)) error {
	return f.pop(ctx, func(_ string, deltas Deltas[T], isInInitialList bool) { process(deltas, isInInitialList) })
}

// pop is Pop giving process the key too, as the FIFO's KeyFunc made it.
func (f *DeltaFIFO[T]) pop(ctx context.Context, process func(key string, deltas Deltas[T], isInInitialList bool)) error {
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return ErrFIFOClosed
		}
		if f.lenLocked() > 0 {
			f.popLocked(process)
			f.mu.Unlock()
			return nil
		}
		f.mu.Unlock()
		select {
		case <-f.wake:
		case <-ctx.Done():
			return fmt.Errorf("DeltaFIFO pop: %w", ctx.Err())
		}
	}
}

func (f *DeltaFIFO[T]) popLocked(process func(string, Deltas[T], bool)) {
	var key string
	var deltas Deltas[T]
	if len(f.bulkKeys) > 0 { // queue is empty
		key, deltas = f.bulkKeys[0], f.bulkDeltas[:1:1]
		f.bulkKeys, f.bulkDeltas = f.bulkKeys[1:], f.bulkDeltas[1:]
		if len(f.bulkKeys) == 0 {
			f.bulkKeys, f.bulkDeltas = nil, nil
		}
	} else {
		key = f.queue[0]
		f.queue[0] = ""
		f.queue = f.queue[1:]
		deltas = f.items[key]
		delete(f.items, key)
	}
	initial := f.initialCount > 0
	process(key, deltas, initial)
	if initial {
		f.initialCount--
		f.checkSyncedLocked()
	}
}

func (f *DeltaFIFO[T]) checkSyncedLocked() {
	if f.populated && f.initialCount == 0 && f.onSynced != nil {
		f.onSynced()
		f.onSynced = nil
	}
}

// HasSynced reports whether the first Replace's keys (or a first Add) have
// all been popped and processed.
func (f *DeltaFIFO[T]) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.populated && f.initialCount == 0
}

// Len returns the number of queued keys.
func (f *DeltaFIFO[T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lenLocked()
}

// Close makes Pop return ErrFIFOClosed.
func (f *DeltaFIFO[T]) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.signal()
}
