package gc

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// Backoff of a monitor whose watch failed.
const (
	monitorRetry    = 100 * time.Millisecond
	maxMonitorRetry = 30 * time.Second
)

// collectable reports whether the collector follows res's objects: every
// stored resource but create-only ones and events (kube's default
// ignoredResources: core and events.k8s.io, here one store).
func collectable(res *resource.Resource) bool {
	return res.Storage == nil && !res.CreateOnly && !(res.Plural == "events" && (res.Group == "" || res.Group == "events.k8s.io"))
}

// monitor follows one resource's watch cache into the graph.
type monitor struct {
	res    *resource.Resource
	cancel context.CancelFunc
	done   chan struct{}
	synced chan struct{} // closed once its first list is queued
}

func (m *monitor) stop() {
	m.cancel()
	<-m.done
}

// followCatalog runs a monitor for each collectable resource the catalogue
// serves, following its changes, until ctx ends; it returns once every
// monitor has stopped. It sends the first monitors on first.
func (c *Collector) followCatalog(ctx context.Context, first chan<- []*monitor) {
	running := map[resource.GVR]*monitor{}
	defer func() {
		for _, m := range running {
			m.stop()
		}
	}()
	for {
		_, changed := c.cfg.Catalog.Generation()
		want := map[resource.GVR]*resource.Resource{}
		for _, res := range c.cfg.Catalog.All() {
			if collectable(res) {
				want[resource.GVR{Group: res.Group, Version: res.Version, Plural: res.Plural}] = res
			}
		}
		for gvr, m := range running {
			if want[gvr] == m.res {
				continue
			}
			m.stop()
			delete(running, gvr)
			if want[gvr] == nil {
				// No longer served: its objects leave the graph (their
				// dependents are looked at again).
				c.changes.add(&event{typ: relisted, id: identity{APIVersion: m.res.APIVersion(), Kind: m.res.Kind}})
			}
		}
		for gvr, res := range want {
			if running[gvr] == nil {
				running[gvr] = c.startMonitor(ctx, res)
			}
		}
		if first != nil {
			first <- slices.Collect(maps.Values(running))
			first = nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

func (c *Collector) startMonitor(ctx context.Context, res *resource.Resource) *monitor {
	ctx, cancel := context.WithCancel(ctx)
	m := &monitor{res: res, cancel: cancel, done: make(chan struct{}), synced: make(chan struct{})}
	go func() {
		defer close(m.done)
		delay := monitorRetry
		for {
			err := c.watch(ctx, m)
			if ctx.Err() != nil {
				return
			}
			c.metrics.SyncError.Inc()
			c.log.Warn("garbage collector: watch of a resource ended; listing again", "resource", res.GroupResource(), "err", err, "after", delay)
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, maxMonitorRetry)
		}
	}()
	return m
}

// watch feeds the graph from res's cache: every object as stored now (a
// consistent list, as kube's informers make), then a relisted change (the
// graph drops what the list no longer has), then each change, until the
// watch ends.
func (c *Collector) watch(ctx context.Context, m *monitor) error {
	res := m.res
	cache := c.cfg.Cache(res)
	if cache == nil {
		return errors.New("the resource's watch cache is closed")
	}
	rev, err := c.cfg.Registry.Storage().CurrentRevision(ctx)
	if err != nil {
		return err
	}
	if err := cache.WaitFresh(ctx, rev); err != nil {
		return err
	}
	w, err := cache.Watch(ctx, watchcache.WatchOptions{InitialEvents: true, InitialEventsEnd: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	listed := map[string]struct{}{} // nil once the initial events are over
	var items []watchcache.Item
	for {
		if items, err = w.Next(ctx, items[:0]); err != nil {
			return err
		}
		for _, it := range items {
			switch it.Type {
			case api.Bookmark:
				if it.InitialEventsEnd {
					c.changes.add(&event{typ: relisted, id: identity{APIVersion: res.APIVersion(), Kind: res.Kind}, listed: listed})
					listed = nil
					select {
					case <-m.synced:
					default:
						close(m.synced)
					}
				}
			case api.Error:
				return errors.New(it.Status.Message)
			default:
				meta, err := parseMeta(it.Object)
				if err != nil {
					c.log.Warn("garbage collector: an object's metadata cannot be read", "resource", res.GroupResource(), "err", err)
					continue
				}
				e := meta.event(res)
				if it.Type == api.Deleted {
					e = &event{typ: deleted, id: e.id}
				} else if listed != nil {
					listed[e.id.UID] = struct{}{}
				}
				c.changes.add(e)
			}
		}
	}
}
