package cache

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
)

// Errors of the informer's methods.
var (
	ErrStarted       = errors.New("informer already started")
	ErrNotRegistered = errors.New("event handler not registered with this informer")
	ErrStopped       = errors.New("informer stopped")
)

// MinimumResyncPeriod is the shortest per-handler resync period; shorter
// ones are raised to it (client-go's minimumResyncPeriod).
const MinimumResyncPeriod = time.Second

// InformerOptions configure a SharedIndexInformer. The zero value is usable.
type InformerOptions[T any] struct {
	// Reflector configures listing and watching.
	Reflector ReflectorOptions
	// Indexers are added to the cache's namespace index.
	Indexers Indexers[T]
	// ResyncPeriod is AddEventHandler's resync period; 0 means none.
	ResyncPeriod time.Duration
	// HandlerBufferSize bounds each handler's ordered buffer; 0 means
	// DefaultHandlerBufferSize. See ResourceEventHandler for what happens
	// beyond it.
	HandlerBufferSize int
}

// SharedIndexInformer keeps an indexed cache of one resource with a
// Reflector and a DeltaFIFO, and tells any number of handlers what changes.
type SharedIndexInformer[T client.Object] struct {
	indexer    *Indexer[T]
	fifo       *DeltaFIFO[T]
	reflector  *Reflector[T]
	processor  *processor[T]
	resync     time.Duration
	bufferSize int
	synced     chan struct{} // closed when the first list has been processed

	// blockDeltas is held while deltas are applied and while a handler
	// added after start is given the cache, so that it sees each object
	// exactly once: in the replay or as a later notification.
	blockDeltas sync.Mutex

	mu      sync.Mutex
	started bool            // guarded by mu
	stopped bool            // guarded by mu; Run is waiting for its goroutines
	ctx     context.Context // guarded by mu; Run's, for handlers added later
	wg      sync.WaitGroup  // Add under mu while !stopped
}

// NewInformer returns an informer of the objects lw lists and watches. Call
// Run to start it.
func NewInformer[T client.Object](lw client.ListerWatcher[T], opts InformerOptions[T]) *SharedIndexInformer[T] {
	s := &SharedIndexInformer[T]{
		indexer:    NewIndexer(opts.Indexers),
		processor:  newProcessor[T](),
		resync:     opts.ResyncPeriod,
		bufferSize: opts.HandlerBufferSize,
		synced:     make(chan struct{}),
	}
	if s.bufferSize <= 0 {
		s.bufferSize = DefaultHandlerBufferSize
	}
	s.fifo = NewDeltaFIFO(DeltaFIFOOptions[T]{
		KeyFunc:      s.indexer.Key,
		KnownObjects: s.indexer,
		OnSynced:     s.markSynced,
	})
	s.reflector = NewReflector(lw, s.fifo, opts.Reflector)
	return s
}

// Indexer returns the cache. Do not modify the objects it returns.
func (s *SharedIndexInformer[T]) Indexer() *Indexer[T] { return s.indexer }

// Lister returns a Lister of the cache.
func (s *SharedIndexInformer[T]) Lister() Lister[T] { return NewLister(s.indexer) }

// Reflector returns the informer's Reflector, for its progress and counters.
func (s *SharedIndexInformer[T]) Reflector() *Reflector[T] { return s.reflector }

// HasSynced reports whether the first list has been loaded into the cache
// and handed to the handlers' buffers.
func (s *SharedIndexInformer[T]) HasSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// Synced returns a channel closed once HasSynced is true.
func (s *SharedIndexInformer[T]) Synced() <-chan struct{} { return s.synced }

// SetTransform sets a function applied to every object from the server
// before it is cached (for example to drop managedFields). It may modify
// the object in place and must be idempotent. It must be set before Run.
func (s *SharedIndexInformer[T]) SetTransform(transform func(T) T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStarted
	}
	s.fifo.setTransform(transform)
	return nil
}

// AddEventHandler registers h with the informer's default resync period.
func (s *SharedIndexInformer[T]) AddEventHandler(h ResourceEventHandler[T]) (*Registration[T], error) {
	return s.AddEventHandlerWithResync(h, s.resync)
}

// AddEventHandlerWithResync registers h; every resync period (0: never, at
// least MinimumResyncPeriod) it gets OnUpdate(obj, obj) for every cached
// object. A handler added after Run first gets every cached object as
// OnAdd(obj, true). It is an error to add one after Run has returned.
func (s *SharedIndexInformer[T]) AddEventHandlerWithResync(h ResourceEventHandler[T], resync time.Duration) (*Registration[T], error) {
	if resync > 0 {
		resync = max(resync, MinimumResyncPeriod)
	}
	l := newListener(h, resync, s.bufferSize)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, ErrStopped
	}
	if !s.started {
		s.processor.add(l)
		return &Registration[T]{l: l}, nil
	}
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	s.processor.add(l)
	for _, obj := range s.indexer.List() {
		l.push(notification[T]{kind: notifyAdd, key: s.indexer.Key(obj), obj: obj, flag: true})
	}
	if s.HasSynced() {
		l.push(notification[T]{kind: notifySynced})
	}
	s.startListenerLocked(l)
	return &Registration[T]{l: l}, nil
}

// RemoveEventHandler stops notifications to a registered handler and its
// goroutine; what it had pending is dropped.
func (s *SharedIndexInformer[T]) RemoveEventHandler(r *Registration[T]) error {
	if !s.processor.remove(r.l) {
		return ErrNotRegistered
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.l.cancel != nil {
		r.l.cancel()
	}
	return nil
}

func (s *SharedIndexInformer[T]) startListenerLocked(l *listener[T]) {
	ctx, cancel := context.WithCancel(s.ctx)
	l.cancel = cancel
	s.wg.Go(func() { l.run(ctx) })
}

// Run starts the informer and blocks until ctx is done and every goroutine
// it started (reflector, resync timer, one per handler) has returned.
func (s *SharedIndexInformer[T]) Run(ctx context.Context) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	s.wg.Go(func() { s.reflector.Run(ctx) })
	s.wg.Go(func() { s.resyncLoop(ctx) })
	for {
		if err := s.fifo.pop(ctx, s.handleDeltas); err != nil {
			break // ctx is done
		}
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *SharedIndexInformer[T]) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStarted
	}
	s.started, s.ctx = true, ctx
	s.processor.mu.RLock()
	defer s.processor.mu.RUnlock()
	for _, l := range s.processor.listeners {
		s.startListenerLocked(l)
	}
	return nil
}

// handleDeltas applies one key's deltas to the cache and notifies the
// handlers. The DeltaFIFO calls it with its lock held; its KeyFunc is the
// Indexer's, so key is the deltas' key in the Indexer too.
func (s *SharedIndexInformer[T]) handleDeltas(key string, deltas Deltas[T], isInInitialList bool) {
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	for _, d := range deltas {
		if d.Type == Deleted {
			// What was never cached no handler was told of.
			if s.indexer.deleteKey(key) {
				s.processor.distribute(notification[T]{kind: notifyDelete, key: key, obj: d.Object, flag: d.FinalStateUnknown}, false)
			}
			continue
		}
		if old, known := s.indexer.updateKey(key, d.Object); known {
			isSync := d.Type == Sync || d.Type == Replaced && old.GetResourceVersion() == d.Object.GetResourceVersion()
			s.processor.distribute(notification[T]{kind: notifyUpdate, key: key, old: old, obj: d.Object}, isSync)
		} else {
			s.processor.distribute(notification[T]{kind: notifyAdd, key: key, obj: d.Object, flag: isInInitialList}, false)
		}
	}
}

// markSynced runs once, when the first list has been processed: it tells
// every handler its initial list is complete.
func (s *SharedIndexInformer[T]) markSynced() {
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	s.processor.distribute(notification[T]{kind: notifySynced}, false)
	close(s.synced)
}

// resyncLoop queues resyncs when handlers' periods are due.
func (s *SharedIndexInformer[T]) resyncLoop(ctx context.Context) {
	for {
		var due <-chan time.Time
		at, ok := s.processor.nextResync()
		timer := time.NewTimer(time.Until(at))
		if ok {
			due = timer.C
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.processor.changed:
		case now := <-due:
			if s.processor.shouldResync(now) {
				s.fifo.Resync()
			}
		}
		timer.Stop()
	}
}

// Registration is a handler's registration with an informer.
type Registration[T any] struct{ l *listener[T] }

// HasSynced reports whether the handler has been called for every object
// of the informer's first list (or, if added later, of the cache).
func (r *Registration[T]) HasSynced() bool {
	select {
	case <-r.l.synced:
		return true
	default:
		return false
	}
}

// Synced returns a channel closed once HasSynced is true.
func (r *Registration[T]) Synced() <-chan struct{} { return r.l.synced }

// Pending returns how many notifications wait for the handler (coalesced
// ones counting once per key, and the end of its initial list as one).
func (r *Registration[T]) Pending() int { return r.l.pending() }

// Coalesced returns how many notifications arrived while the handler's
// buffer was full and were merged per key.
func (r *Registration[T]) Coalesced() uint64 { return r.l.coalescedCount() }

// SyncSignal is anything that says when it has synced: informers and
// registrations.
type SyncSignal interface{ Synced() <-chan struct{} }

// WaitForCacheSync waits until every signal has synced, or ctx ends; it
// reports whether all synced.
func WaitForCacheSync(ctx context.Context, signals ...SyncSignal) bool {
	for _, sig := range signals {
		select {
		case <-sig.Synced():
		case <-ctx.Done():
			return false
		}
	}
	return true
}
