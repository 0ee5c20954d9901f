package server

import (
	"context"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/policy"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// ClusterRole aggregation tries again after a failure (a write the store
// refused) once aggregationRetry has passed, twice as long after each
// failure that follows, up to maxAggregationRetry, so that a write that
// keeps failing (a union too large to store) costs little, as kube's
// controller backs off per role (up to 1000 s). A failed write does not
// hold up the following of changes. A watch that ended starts over from
// every ClusterRole after aggregationRetry (watchcache.Follow's backoff).
const (
	aggregationRetry    = time.Second
	maxAggregationRetry = 5 * time.Minute
)

// aggregation runs the ClusterRole aggregation controller until stop.
type aggregation struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when its goroutine has returned
}

// startAggregation runs kube's ClusterRole aggregation controller, fed by
// the ClusterRoles' watch cache, until stop. Its first pass, over every
// ClusterRole, is done before it returns (unless ctx ends first), so
// that admin, edit and view have their rules once New returns; a failed
// first pass is logged, and tried again by the goroutine.
func (s *Server) startAggregation(ctx context.Context) *aggregation {
	roles, _ := s.catalog.Get(policy.Group, "v1", "clusterroles")
	run, cancel := context.WithCancel(context.Background())
	a := &aggregation{cancel: cancel, done: make(chan struct{})}
	first := make(chan struct{})
	f := &aggregationFollow{s: s, ctx: run, agg: policy.NewAggregator(s.registry, roles, s.log), first: sync.OnceFunc(func() { close(first) })}
	go func() {
		defer close(a.done)
		watchcache.Follow(run, watchcache.FollowOptions{
			Cache:         func() *watchcache.Cache { return s.caches.get(roles) },
			InitialEvents: true,
			OnStart:       f.start,
			Each:          f.each,
			OnSynced:      f.synced,
			Due:           f.due,
			OnDue:         f.retry,
			Ended: func(err error, after time.Duration) {
				s.log.Warn("ClusterRole aggregation: the watch ended; starting over", "err", err, "after", after)
				f.first() // a first pass that could not start does not hold up New
			},
			Retry: aggregationRetry,
		})
	}()
	select {
	case <-first:
	case <-ctx.Done():
	}
	return a
}

func (a *aggregation) stop() {
	a.cancel()
	<-a.done
}

// aggregationFollow is the state of the aggregation's watch, touched by
// watchcache.Follow's goroutine only.
type aggregationFollow struct {
	s     *Server
	ctx   context.Context
	agg   *policy.Aggregator
	first func() // called once the first pass is done
	// initial collects the initial events' roles; nil once they are over.
	initial []api.Object
	// failed is the last pass's error, tried again at retryAt; delay is
	// the wait before the retry after the next failure.
	failed  error
	retryAt time.Time
	delay   time.Duration
}

func (f *aggregationFollow) start() {
	f.initial, f.failed, f.delay = []api.Object{}, nil, aggregationRetry
}

// each gives agg the changes items hold, or collects the initial events.
func (f *aggregationFollow) each(items []watchcache.Item) {
	var err error
	for _, it := range items {
		obj, perr := api.ParseObject(it.Object)
		switch {
		case perr != nil: // the cache decoded it: cannot happen
		case f.initial != nil:
			f.initial = append(f.initial, obj)
		case it.Type == api.Deleted:
			err = f.agg.Changed(f.ctx, obj, nil)
		default:
			err = f.agg.Changed(f.ctx, nil, obj)
		}
	}
	if f.initial == nil {
		f.passed(err) // each change aggregates everything again: the last says whether all is done
	}
}

// synced gives agg every ClusterRole, as of the initial events.
func (f *aggregationFollow) synced() {
	all := f.initial
	f.initial = nil
	f.passed(f.agg.Resync(f.ctx, all))
	f.first()
}

func (f *aggregationFollow) due() (time.Time, bool) { return f.retryAt, f.failed != nil }

// retry aggregates again after a failed pass, unless a later change
// succeeded first.
func (f *aggregationFollow) retry() {
	f.delay = min(2*f.delay, maxAggregationRetry) // for the next retry, if this one fails
	f.passed(f.agg.Retry(f.ctx))
}

// passed notes the outcome of a pass: after a failure, a retry is due
// once the backoff has passed.
func (f *aggregationFollow) passed(err error) {
	if f.failed = err; err == nil {
		f.delay = aggregationRetry
		return
	}
	if f.ctx.Err() != nil {
		f.failed = nil // a write cut short by stop
		return
	}
	f.retryAt = time.Now().Add(f.delay)
	f.s.log.Warn("ClusterRole aggregation failed; trying again", "err", err, "after", f.delay)
}
