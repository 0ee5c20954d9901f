package workqueue

import (
	"sync"
	"time"
)

// Queue is a de-duplicating, delaying, rate-limited work queue. The zero
// value is not usable; call New.
type Queue[T comparable] struct {
	limiter RateLimiter[T]   // immutable; safe for concurrent use on its own
	metrics *queueMetrics[T] // immutable pointer; its maps guarded by mu; nil without a provider

	mu   sync.Mutex
	cond *sync.Cond // on mu: signalled when an item is queued, Done or on shutdown
	// queue holds the items ready for a worker, in order; each is also in dirty.
	queue []T
	// dirty holds every item that needs processing: queued, or added again
	// while a worker holds it.
	dirty map[T]struct{}
	// processing holds the items handed out by Get and not yet Done.
	processing map[T]struct{}
	// waiting holds the timers of items added with a delay.
	waiting  map[T]*delayed
	shutdown bool
}

// delayed is an item's pending AddAfter.
type delayed struct {
	timer *time.Timer
	at    time.Time
}

// Options configure a Queue.
type Options[T comparable] struct {
	// RateLimiter decides AddRateLimited's delays; nil means
	// DefaultControllerRateLimiter.
	RateLimiter RateLimiter[T]
	// Name names the queue's metrics.
	Name string
	// Metrics, if set, records the queue's metrics under Name.
	Metrics MetricsProvider
}

// New returns an empty queue.
func New[T comparable](opts Options[T]) *Queue[T] {
	if opts.RateLimiter == nil {
		opts.RateLimiter = DefaultControllerRateLimiter[T]()
	}
	q := &Queue[T]{
		limiter:    opts.RateLimiter,
		dirty:      map[T]struct{}{},
		processing: map[T]struct{}{},
		waiting:    map[T]*delayed{},
		metrics:    newQueueMetrics[T](opts.Name, opts.Metrics),
	}
	q.cond = sync.NewCond(&q.mu)
	if q.metrics != nil {
		opts.Metrics.NewUnfinishedWorkMetric(opts.Name, func() (float64, float64) {
			q.mu.Lock()
			defer q.mu.Unlock()
			return q.metrics.unfinished()
		})
	}
	return q
}

// Add marks item as needing processing. It does nothing after ShutDown, or
// if item already waits to be processed.
func (q *Queue[T]) Add(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(item)
}

func (q *Queue[T]) addLocked(item T) {
	if q.shutdown {
		return
	}
	if _, ok := q.dirty[item]; ok {
		return
	}
	q.metrics.add(item)
	q.dirty[item] = struct{}{}
	if _, ok := q.processing[item]; ok {
		return // queued again by Done
	}
	q.queue = append(q.queue, item)
	q.cond.Signal()
}

// Get blocks until an item is ready and returns it; the caller must call
// Done with it when finished. shutdown is true, and item the zero value,
// once the queue has been shut down and is empty.
func (q *Queue[T]) Get() (item T, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if len(q.queue) == 0 {
		return item, true
	}
	item = q.queue[0]
	var zero T
	q.queue[0] = zero
	q.queue = q.queue[1:]
	q.metrics.get(item)
	q.processing[item] = struct{}{}
	delete(q.dirty, item)
	return item, false
}

// Done marks item as processed. If it was added again while being
// processed, it is queued again.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.metrics.done(item)
	delete(q.processing, item)
	if _, ok := q.dirty[item]; ok {
		q.queue = append(q.queue, item)
	}
	// Broadcast, not Signal: ShutDownWithDrain waits on the same condition
	// and must not swallow the wake-up meant for a worker.
	q.cond.Broadcast()
}

// Len returns the number of items ready for a worker (not those being
// processed or waiting for a delay).
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// AddAfter adds item once delay has passed; a delay of zero or less adds it
// now. If item already waits for an earlier time, that time stands.
func (q *Queue[T]) AddAfter(item T, delay time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	q.metrics.retry() // every AddAfter, as client-go counts retries
	if delay <= 0 {
		q.addLocked(item)
		return
	}
	at := time.Now().Add(delay)
	if d, ok := q.waiting[item]; ok {
		if !at.Before(d.at) {
			return
		}
		d.timer.Stop()
	}
	q.waiting[item] = &delayed{at: at, timer: time.AfterFunc(delay, func() { q.fire(item) })}
}

// fire adds a delayed item when its timer goes off.
func (q *Queue[T]) fire(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.waiting, item)
	q.addLocked(item)
}

// AddRateLimited adds item after the delay the rate limiter gives it.
func (q *Queue[T]) AddRateLimited(item T) {
	q.AddAfter(item, q.limiter.When(item))
}

// Forget tells the rate limiter item is done with: its failures are
// forgotten. It does not remove item from the queue.
func (q *Queue[T]) Forget(item T) { q.limiter.Forget(item) }

// NumRequeues returns how many times item has been rate-limited since it was
// last forgotten.
func (q *Queue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }

// ShutDown makes the queue ignore new items and drops items waiting for a
// delay. Workers get what is already queued; then Get reports shutdown.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdownLocked()
}

func (q *Queue[T]) shutdownLocked() {
	q.shutdown = true
	for item, d := range q.waiting {
		d.timer.Stop()
		delete(q.waiting, item)
	}
	q.cond.Broadcast()
}

// ShutDownWithDrain shuts the queue down and waits until every item handed
// out by Get, including those still queued when it was called, is Done.
// Workers must keep calling Get and Done for it to return.
func (q *Queue[T]) ShutDownWithDrain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdownLocked()
	for len(q.processing) > 0 || len(q.queue) > 0 {
		q.cond.Wait()
	}
}

// ShuttingDown reports whether ShutDown has been called.
func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}
