package server

import (
	"context"
	"errors"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/policy"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// ClusterRole aggregation tries again after a failure (a write the store
// refused, or its watch ended, after which it starts over from every
// ClusterRole) once aggregationRetry has passed, twice as long after each
// failure that follows, up to maxAggregationRetry, so that a write that
// keeps failing (a union too large to store) costs little, as kube's
// controller backs off per role (up to 1000 s). A failed write does not
// hold up the following of changes.
const (
	aggregationRetry    = time.Second
	maxAggregationRetry = 5 * time.Minute
)

// aggregation runs the ClusterRole aggregation controller until Close.
type aggregation struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when its goroutine has returned
}

// startAggregation runs kube's ClusterRole aggregation controller, fed by
// the ClusterRoles' watch cache, until stop. Its first pass, over every
// ClusterRole, is done before it returns (ctx bounding it), so that
// admin, edit and view have their rules once New returns; a failed first
// pass is logged, and tried again by the goroutine.
func (s *Server) startAggregation(ctx context.Context) *aggregation {
	roles, _ := s.catalog.Get(policy.Group, "v1", "clusterroles")
	agg := policy.NewAggregator(s.registry, roles, s.log)
	w, err := s.resyncAggregator(ctx, agg, roles)
	run, cancel := context.WithCancel(context.Background())
	a := &aggregation{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		delay := aggregationRetry
		for {
			if err == nil {
				delay = aggregationRetry
				err = s.follow(run, agg, w)
				w.Stop()
			}
			if run.Err() != nil {
				return
			}
			s.log.Warn("ClusterRole aggregation failed; starting over", "err", err, "after", delay)
			select {
			case <-run.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, maxAggregationRetry)
			w, err = s.resyncAggregator(run, agg, roles)
		}
	}()
	return a
}

func (a *aggregation) stop() {
	a.cancel()
	<-a.done
}

// resyncAggregator watches every ClusterRole from the watch cache, gives
// agg their current state (the watch's initial events), and returns the
// watch, which follows on from there.
func (s *Server) resyncAggregator(ctx context.Context, agg *policy.Aggregator, roles *resource.Resource) (*watchcache.Watcher, error) {
	c := s.caches.get(roles)
	if c == nil {
		return nil, errors.New("the ClusterRoles' watch cache is closed")
	}
	w, err := c.Watch(ctx, watchcache.WatchOptions{InitialEvents: true, InitialEventsEnd: true})
	if err != nil {
		return nil, err
	}
	var all []api.Object
	var items []watchcache.Item
	for {
		if items, err = w.Next(ctx, items[:0]); err != nil {
			w.Stop()
			return nil, err
		}
		for i, it := range items {
			if it.Type == api.Bookmark && it.InitialEventsEnd {
				err := agg.Resync(ctx, all)
				if err == nil {
					ended, failed := apply(ctx, agg, items[i+1:]) // changes after the initial events
					err = errors.Join(ended, failed)
				}
				if err != nil {
					w.Stop()
					return nil, err
				}
				return w, nil
			}
			obj, err := watched(it)
			if err != nil {
				w.Stop()
				return nil, err
			}
			if obj != nil {
				all = append(all, obj)
			}
		}
	}
}

// follow gives agg each change w delivers until w ends. After a change
// agg failed to aggregate, it asks agg to Retry when a backoff has passed
// (w's wait cut short for it), unless a later change succeeded first.
func (s *Server) follow(ctx context.Context, agg *policy.Aggregator, w *watchcache.Watcher) error {
	var items []watchcache.Item
	var failed error
	delay := aggregationRetry
	for {
		next, cancel := ctx, context.CancelFunc(func() {})
		if failed != nil {
			next, cancel = context.WithTimeout(ctx, delay)
		}
		var err error
		items, err = w.Next(next, items[:0])
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case failed != nil && errors.Is(err, context.DeadlineExceeded):
			err = agg.Retry(ctx)
			delay = min(2*delay, maxAggregationRetry) // for the next retry, if this one fails
		case err != nil:
			return err
		default:
			var ended error
			if ended, err = apply(ctx, agg, items); ended != nil {
				return ended
			}
		}
		if failed = err; failed == nil {
			delay = aggregationRetry
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err() // a write cut short by stop
		}
		s.log.Warn("ClusterRole aggregation failed; trying again", "err", failed, "after", delay)
	}
}

// apply gives agg the changes items hold. It returns the error of an
// ERROR item (the watch is over), and apart from it agg's last error (each
// change aggregates everything again, so the last says whether all is
// done).
func apply(ctx context.Context, agg *policy.Aggregator, items []watchcache.Item) (ended, err error) {
	for _, it := range items {
		obj, werr := watched(it)
		switch {
		case werr != nil:
			return werr, err
		case obj == nil:
		case it.Type == api.Deleted:
			err = agg.Changed(ctx, obj, nil)
		default:
			err = agg.Changed(ctx, nil, obj)
		}
	}
	return nil, err
}

// watched returns the object of a watch item, nil for a bookmark, and the
// error an ERROR item carries.
func watched(it watchcache.Item) (api.Object, error) {
	switch it.Type {
	case api.Error:
		return nil, &api.StatusError{Status: *it.Status}
	case api.Bookmark:
		return nil, nil
	}
	return api.ParseObject(it.Object)
}
