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

// aggregationRetry is how long ClusterRole aggregation waits before
// starting over (every ClusterRole again) after a failure: a write the
// store refused, or its watch ended.
const aggregationRetry = time.Second

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
		for {
			if err == nil {
				err = feed(run, agg, w)
				w.Stop()
			}
			if run.Err() != nil {
				return
			}
			s.log.Warn("ClusterRole aggregation failed; starting over", "err", err)
			select {
			case <-run.Done():
				return
			case <-time.After(aggregationRetry):
			}
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
// each change, until w ends or agg fails.
func feed(ctx context.Context, agg *policy.Aggregator, w *watchcache.Watcher) error {
	var initial []api.Object // until the initial events end
	synced := false
	var items []watchcache.Item
	for {
		var err error
		if items, err = w.Next(ctx, items[:0]); err != nil {
			return err
		}
		for _, it := range items {
			switch it.Type {
			case api.Error:
				return &api.StatusError{Status: *it.Status}
			case api.Bookmark:
				if it.InitialEventsEnd {
					synced = true
					if err := agg.Resync(ctx, initial); err != nil {
						return err
					}
					initial = nil
				}
				continue
			}
			obj, err := api.ParseObject(it.Object)
			if err != nil {
				return err
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
				return err
			}
		}
	}
}
