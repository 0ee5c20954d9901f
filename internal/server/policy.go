package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/policy"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// ClusterRole aggregation starts over (every ClusterRole again) after a
// failure (a write the store refused, its watch ended) once
// aggregationRetry has passed, twice as long after each failure that
// follows before it got through its first pass, up to maxAggregationRetry,
// so that a write that keeps failing (a union too large to store) costs
// little (kube's controller backs off per role up to 1000 s).
const (
	aggregationRetry    = time.Second
	maxAggregationRetry = 5 * time.Minute
)

// aggregation runs the ClusterRole aggregation controller until Close.
type aggregation struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when its goroutine has returned
}

// ensurePolicy creates or reconciles kube's default RBAC objects (after
// the namespaces of the namespaced ones), then aggregates the ClusterRoles
// once, so that admin, edit and view have their rules before the server
// serves.
func (s *Server) ensurePolicy(ctx context.Context) (*policy.Aggregator, error) {
	if err := policy.Ensure(ctx, s.registry, s.catalog, s.log); err != nil {
		return nil, err
	}
	roles, ok := s.catalog.Get(policy.Group, "v1", "clusterroles")
	if !ok {
		return nil, errors.New("the catalogue has no clusterroles resource")
	}
	agg := policy.NewAggregator(s.registry, roles, s.log)
	all, err := s.registry.List(ctx, roles, "", registry.ListOptions{})
	if err == nil {
		err = agg.Resync(ctx, all.Items)
	}
	if err != nil {
		return nil, fmt.Errorf("aggregating ClusterRoles: %w", err)
	}
	return agg, nil
}

// startAggregation keeps the aggregated ClusterRoles current from the
// ClusterRoles' watch cache until stop. It opens the first watch at once
// (ctx bounds the wait for the cache's first list), so that the cache runs
// when New returns.
func (s *Server) startAggregation(ctx context.Context, agg *policy.Aggregator) *aggregation {
	roles, _ := s.catalog.Get(policy.Group, "v1", "clusterroles")
	w, err := s.watchClusterRoles(ctx, roles)
	run, cancel := context.WithCancel(context.Background())
	a := &aggregation{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		delay := aggregationRetry
		for {
			if err == nil {
				var synced bool
				synced, err = feed(run, agg, w)
				w.Stop()
				if synced {
					delay = aggregationRetry
				}
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
			w, err = s.watchClusterRoles(run, roles)
		}
	}()
	return a
}

// watchClusterRoles watches every ClusterRole from the watch cache, from
// their current state (initial events).
func (s *Server) watchClusterRoles(ctx context.Context, roles *resource.Resource) (*watchcache.Watcher, error) {
	c := s.caches.get(roles)
	if c == nil {
		return nil, errors.New("the ClusterRoles' watch cache is closed")
	}
	return c.Watch(ctx, watchcache.WatchOptions{InitialEvents: true, InitialEventsEnd: true})
}

func (a *aggregation) stop() {
	a.cancel()
	<-a.done
}

// feed feeds agg from w: every ClusterRole (its initial events), then
// each change, until w ends or agg fails. synced reports whether agg's
// first pass (Resync) succeeded.
func feed(ctx context.Context, agg *policy.Aggregator, w *watchcache.Watcher) (synced bool, err error) {
	var initial []api.Object // until the initial events end
	var items []watchcache.Item
	for {
		if items, err = w.Next(ctx, items[:0]); err != nil {
			return synced, err
		}
		for _, it := range items {
			switch it.Type {
			case api.Error:
				return synced, &api.StatusError{Status: *it.Status}
			case api.Bookmark:
				if it.InitialEventsEnd {
					if err := agg.Resync(ctx, initial); err != nil {
						return false, err
					}
					initial, synced = nil, true
				}
				continue
			}
			obj, err := api.ParseObject(it.Object)
			if err != nil {
				return synced, err
			}
			switch {
			case !synced:
				initial = append(initial, obj)
			case it.Type == api.Deleted:
				err = agg.Changed(ctx, obj, nil)
			default:
				err = agg.Changed(ctx, nil, obj)
			}
			if err != nil {
				return synced, err
			}
		}
	}
}
