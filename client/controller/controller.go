package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/workqueue"
)

// Errors of Start and of adding sources.
var (
	ErrStarted          = errors.New("controller already started")
	ErrCacheSyncTimeout = errors.New("timed out waiting for the informers to sync")
	ErrDrainTimeout     = errors.New("reconciles still running after the drain timeout")
)

// Defaults of Options.
const (
	// DefaultCacheSyncTimeout is controller-runtime's CacheSyncTimeout.
	DefaultCacheSyncTimeout = 2 * time.Minute
	// DefaultDrainTimeout is controller-runtime's graceful shutdown period
	// (the manager's GracefulShutdownTimeout).
	DefaultDrainTimeout = 30 * time.Second
)

// Request names the object to reconcile.
type Request struct {
	Namespace, Name string
}

// String returns "namespace/name", or "name" for a cluster-scoped object.
func (r Request) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Result says whether and when to reconcile a Request again after a
// reconcile that returned no error.
type Result struct {
	// Requeue queues the Request again after the rate limiter's backoff.
	Requeue bool
	// RequeueAfter, if positive, queues the Request again after this long
	// and forgets its backoff; it takes precedence over Requeue.
	RequeueAfter time.Duration
}

// Reconciler brings the world in line with the object req names. It is
// called for one Request at a time (never twice at once for the same one)
// and must return when ctx is done.
type Reconciler func(ctx context.Context, req Request) (Result, error)

// Options configure a Controller.
type Options struct {
	// Name identifies the controller in logs, metrics and the queue's
	// metrics; required.
	Name string
	// MaxConcurrentReconciles is the number of workers; 0 means 1.
	MaxConcurrentReconciles int
	// RateLimiter spaces retries; nil means workqueue.DefaultControllerRateLimiter.
	RateLimiter workqueue.RateLimiter[Request]
	// CacheSyncTimeout bounds Start's wait for the sources to sync; 0 means
	// DefaultCacheSyncTimeout.
	CacheSyncTimeout time.Duration
	// DrainTimeout bounds Start's wait for reconciles in flight once its
	// context is done; 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Logger logs reconcile errors and panics; nil means slog.Default().
	Logger *slog.Logger
	// Metrics, if set, records the controller's and its queue's metrics
	// under Name.
	Metrics MetricsProvider
}

// Controller reconciles the Requests its sources enqueue. Create it with
// New, add sources with For, Owns and Watches, then call Start.
type Controller struct {
	opts      Options
	reconcile Reconciler
	queue     *workqueue.Queue[Request]
	metrics   ReconcileMetrics

	mu      sync.Mutex
	started bool     // guarded by mu
	sources []source // guarded by mu; append-only until Start
}

// source is one informer handler of the controller.
type source struct {
	registration cache.SyncSignal
	remove       func()
}

// New returns a Controller that calls reconcile for each Request.
func New(opts Options, reconcile Reconciler) (*Controller, error) {
	if opts.Name == "" {
		return nil, errors.New("controller: Options.Name is required")
	}
	opts.MaxConcurrentReconciles = max(opts.MaxConcurrentReconciles, 1)
	if opts.CacheSyncTimeout <= 0 {
		opts.CacheSyncTimeout = DefaultCacheSyncTimeout
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Logger = opts.Logger.With("controller", opts.Name)
	qopts := workqueue.Options[Request]{RateLimiter: opts.RateLimiter, Name: opts.Name}
	var metrics ReconcileMetrics = noMetrics{}
	if opts.Metrics != nil {
		qopts.Metrics = opts.Metrics
		metrics = opts.Metrics.NewReconcileMetrics(opts.Name, opts.MaxConcurrentReconciles)
	}
	return &Controller{
		opts:      opts,
		reconcile: reconcile,
		queue:     workqueue.New(qopts),
		metrics:   metrics,
	}, nil
}

// Queue returns the controller's queue, for sources of the caller's own
// (a timer, an external system) to Add Requests to.
func (c *Controller) Queue() *workqueue.Queue[Request] { return c.queue }

// addSource registers a source before Start.
func (c *Controller) addSource(add func() (source, error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return ErrStarted
	}
	s, err := add()
	if err != nil {
		return err
	}
	c.sources = append(c.sources, s)
	return nil
}

// Start waits for the sources to sync, runs the workers until ctx is
// done, then shuts down as the package documentation says. It returns nil
// after a clean shutdown (ctx done), ErrCacheSyncTimeout or
// ErrDrainTimeout otherwise. It may be called once.
func (c *Controller) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return ErrStarted
	}
	c.started = true
	sources := c.sources
	c.mu.Unlock()
	defer func() {
		c.queue.ShutDown()
		for _, s := range sources {
			s.remove()
		}
	}()

	if err := c.waitForSync(ctx, sources); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range c.opts.MaxConcurrentReconciles {
		wg.Go(func() { c.work(ctx) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()
	drain := time.NewTimer(c.opts.DrainTimeout)
	defer drain.Stop()
	select {
	case <-workersDone:
		return nil
	case <-drain.C:
		return fmt.Errorf("controller %s: %w", c.opts.Name, ErrDrainTimeout)
	}
}

// waitForSync waits until every source's handler has seen its informer's
// first list. A ctx done first is a clean shutdown (nil).
func (c *Controller) waitForSync(ctx context.Context, sources []source) error {
	syncCtx, cancel := context.WithTimeout(ctx, c.opts.CacheSyncTimeout)
	defer cancel()
	signals := make([]cache.SyncSignal, len(sources))
	for i, s := range sources {
		signals[i] = s.registration
	}
	if cache.WaitForCacheSync(syncCtx, signals...) || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("controller %s: %w", c.opts.Name, ErrCacheSyncTimeout)
}

// work reconciles Requests until the queue is shut down or ctx is done.
func (c *Controller) work(ctx context.Context) {
	for {
		req, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		if ctx.Err() != nil {
			c.queue.Done(req)
			return
		}
		c.handle(ctx, req)
		c.queue.Done(req)
	}
}

// handle reconciles req and queues it again as its outcome says.
func (c *Controller) handle(ctx context.Context, req Request) {
	c.metrics.Started()
	began := time.Now()
	res, err := c.call(ctx, req)
	result := ResultSuccess
	switch {
	case err != nil:
		result = ResultError
		c.queue.AddRateLimited(req)
		c.opts.Logger.Error("reconcile failed", "request", req.String(), "err", err)
	case res.RequeueAfter > 0:
		result = ResultRequeueAfter
		c.queue.Forget(req)
		c.queue.AddAfter(req, res.RequeueAfter)
	case res.Requeue:
		result = ResultRequeue
		c.queue.AddRateLimited(req)
	default:
		c.queue.Forget(req)
	}
	c.metrics.Finished(result, time.Since(began))
}

// call runs the Reconciler, turning a panic into an error.
func (c *Controller) call(ctx context.Context, req Request) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.metrics.Panicked()
			c.opts.Logger.Error("reconcile panicked", "request", req.String(), "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v [recovered]", r)
		}
	}()
	return c.reconcile(ctx, req)
}
