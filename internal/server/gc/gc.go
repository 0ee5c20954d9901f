// Package gc is kube-controller-manager's garbage collector, inside the
// server: it deletes the objects whose owners are all gone, and carries out
// the foreground and orphan deletions that DELETE's propagationPolicy asks
// for through the `foregroundDeletion` and `orphan` finalizers.
//
// # Data flow
//
// One monitor per collectable resource (every stored resource of the
// catalogue but events and create-only kinds, followed as definitions come
// and go) watches the resource's watch cache from its initial events and
// turns each event into a graph change, with only the metadata the
// collector needs. A single goroutine applies the changes to the graph (the
// objects by uid, each with its owners and dependents; an owner not seen yet
// is a virtual node until the store says whether it exists) and queues work
// as kube's GraphBuilder does. Workers take it from two rate-limited queues,
// attemptToDelete and attemptToOrphan, and read the store directly (not the
// graph, which may lag) before every decision; writes go through the
// registry, with preconditions, as kube's collector writes through the API.
// A monitor whose watch ends starts again from a fresh list, after which
// the graph drops the objects of its resource that the list no longer has.
//
// # Concurrency
//
// Run owns every goroutine: the monitors, the graph builder and the
// workers, all stopped when its context ends. graph.mu guards every node's
// fields; the graph builder holds it to write, workers to read, and neither
// holds it across a store call. absentOwners' lock and the queues' are
// leaves.
package gc

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/workqueue"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// DefaultWorkers is kube-controller-manager's --concurrent-gc-syncs.
const DefaultWorkers = 20

// Config configures a Collector.
type Config struct {
	Catalog  *resource.Catalog
	Registry *registry.Registry
	// Cache returns res's watch cache, or nil when res is no longer served
	// as it is (the server's caches.get).
	Cache func(res *resource.Resource) *watchcache.Cache
	// Workers is the number of workers of each queue; 0 means DefaultWorkers.
	Workers int
	// Metrics receives the collector's metrics; nil means new ones.
	Metrics *metrics.Metrics
	Log     *slog.Logger // nil means slog.Default()
}

// Collector is the garbage collector. Run it once.
type Collector struct {
	cfg      Config
	graph    *graph
	changes  *workqueue.Queue[*event] // kube's graphChanges
	toDelete *workqueue.Queue[*node]  // kube's attemptToDelete
	toOrphan *workqueue.Queue[*node]  // kube's attemptToOrphan
	kinds    *kinds
	metrics  *metrics.GC
	log      *slog.Logger
	// attempted, if set (tests), is told of each attemptToDelete outcome.
	attempted func(id identity, err error)
}

// New returns a collector; Run starts it.
func New(cfg Config) *Collector {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	m, queues := cfg.Metrics.GC(), cfg.Metrics.Workqueues()
	c := &Collector{
		cfg: cfg, metrics: m, log: cfg.Log, kinds: &kinds{catalog: cfg.Catalog},
		changes:  newQueue[*event](queues, "garbage_collector_graph_changes"),
		toDelete: newQueue[*node](queues, "garbage_collector_attempt_to_delete"),
		toOrphan: newQueue[*node](queues, "garbage_collector_attempt_to_orphan"),
	}
	c.graph = &graph{nodes: map[string]*node{}, absent: newAbsentOwners(absentOwnersSize), toDelete: c.toDelete, toOrphan: c.toOrphan, log: cfg.Log}
	return c
}

// initialSyncTimeout bounds the wait for the graph to hold every object
// before the workers start (kube-controller-manager's 30 s).
const initialSyncTimeout = 30 * time.Second

// Run collects garbage until ctx ends, then stops every goroutine it
// started and returns. As kube's, its workers start once the graph holds
// every object listed at start (or after initialSyncTimeout), so that a
// foreground deletion does not finish before its dependents of another
// resource are known.
func (c *Collector) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { work(c.changes, func(e *event) bool { c.graph.apply(e); return true }) })
	first := make(chan []*monitor, 1)
	monitorsDone := make(chan struct{})
	wg.Go(func() {
		defer close(monitorsDone)
		c.followCatalog(ctx, first) // returns once ctx ends and every monitor has stopped
	})
	select {
	case ms := <-first:
		c.waitSynced(ctx, ms)
	case <-ctx.Done():
	}
	if ctx.Err() == nil {
		for range c.cfg.Workers {
			wg.Go(func() { work(c.toDelete, func(n *node) bool { return c.attemptToDeleteWorker(ctx, n) }) })
			wg.Go(func() { work(c.toOrphan, func(n *node) bool { return c.attemptToOrphanWorker(ctx, n) }) })
		}
	}
	<-monitorsDone
	c.changes.ShutDown()
	c.toDelete.ShutDown()
	c.toOrphan.ShutDown()
	wg.Wait()
}

// waitSynced waits until every monitor of ms has given its initial list
// and the graph builder has applied them, ctx ends, or
// initialSyncTimeout passes.
func (c *Collector) waitSynced(ctx context.Context, ms []*monitor) {
	wait, cancel := context.WithTimeout(ctx, initialSyncTimeout)
	defer cancel()
	for _, m := range ms {
		select {
		case <-m.synced:
		case <-wait.Done():
			if ctx.Err() == nil { // timed out, not stopped
				c.log.Warn("garbage collector: not every resource could be listed; collecting anyway", "waiting for", m.res.GroupResource())
			}
			return
		}
	}
	applied := make(chan struct{})
	c.changes.Add(&event{typ: barrier, applied: applied}) // after every list: one builder, in order
	select {
	case <-applied:
	case <-wait.Done():
	}
}

// newQueue is a workqueue with kube's workqueue metrics under name.
func newQueue[T comparable](m workqueue.MetricsProvider, name string) *workqueue.Queue[T] {
	return workqueue.New(workqueue.Options[T]{Name: name, Metrics: m})
}

// work runs f on each item of q until q shuts down: an item f handled
// (true) is forgotten, one it did not is retried after its backoff.
func work[T comparable](q *workqueue.Queue[T], f func(T) bool) {
	for {
		item, shutdown := q.Get()
		if shutdown {
			return
		}
		if f(item) {
			q.Forget(item)
		} else {
			q.AddRateLimited(item)
		}
		q.Done(item)
	}
}

// Errors of attemptToDeleteItem that end an item's processing.
var (
	// errVirtualDeleteQueued: the object is gone, and a virtual delete
	// event will take it out of the graph.
	errVirtualDeleteQueued = errors.New("enqueued virtual delete event")
	// errNamespacedOwnerOfClusterScoped does not resolve on retry.
	errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped objects cannot refer to namespaced owners")
)

// attemptToDeleteWorker processes one item of attemptToDelete, as kube's,
// and reports whether it is done with (false: retry it).
func (c *Collector) attemptToDeleteWorker(ctx context.Context, n *node) bool {
	st, current := c.graph.state(n)
	if st.virtual && !current {
		return true // deleted from the graph, or observed, meanwhile
	}
	err := c.attemptToDeleteItem(ctx, n)
	if c.attempted != nil {
		c.attempted(st.id, err)
	}
	var unmapped *mappingError
	switch {
	case errors.Is(err, errVirtualDeleteQueued), errors.Is(err, errNamespacedOwnerOfClusterScoped):
		return true
	case errors.As(err, &unmapped):
		c.log.Debug("garbage collector: owner kind not served; will retry", "item", st.id, "err", err)
		return false
	case err != nil:
		if ctx.Err() == nil {
			c.log.Warn("garbage collector: error syncing item", "item", st.id, "err", err)
		}
		return false
	}
	st, _ = c.graph.state(n)
	return !st.virtual // not observed by a monitor yet: look again
}

// attemptToOrphanWorker removes the owner n from its dependents'
// ownerReferences, then its `orphan` finalizer, as kube's.
func (c *Collector) attemptToOrphanWorker(ctx context.Context, n *node) bool {
	st, _ := c.graph.state(n)
	if err := c.orphanDependents(ctx, st.id, c.graph.dependents(n)); err != nil {
		if ctx.Err() == nil {
			c.log.Warn("garbage collector: orphaning dependents failed", "owner", st.id, "err", err)
		}
		return false
	}
	if err := c.removeFinalizer(ctx, st.id, registry.OrphanFinalizer); err != nil {
		if ctx.Err() == nil {
			c.log.Warn("garbage collector: removing the orphan finalizer failed", "owner", st.id, "err", err)
		}
		return false
	}
	return true
}
