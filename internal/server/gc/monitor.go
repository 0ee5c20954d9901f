package gc

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// monitorRetry is how long a monitor whose watch ended waits before it
// lists again, the first time (watchcache.Follow backs off from there).
const monitorRetry = 100 * time.Millisecond

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
				c.changes.Add(&event{typ: relisted, id: identity{APIVersion: m.res.APIVersion(), Kind: m.res.Kind}})
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
		watchcache.Follow(ctx, c.follow(m))
	}()
	return m
}

// follow feeds the graph from m's cache: every object as stored now (a
// consistent list, as kube's informers make), then a relisted change (the
// graph drops what the list no longer has), then each change; and again
// from a new list whenever the watch ends.
func (c *Collector) follow(m *monitor) watchcache.FollowOptions {
	res := m.res
	id := identity{APIVersion: res.APIVersion(), Kind: res.Kind}
	var listed map[string]struct{} // the initial events' UIDs; nil once they are over
	return watchcache.FollowOptions{
		Cache:         func() *watchcache.Cache { return c.cfg.Cache(res) },
		InitialEvents: true,
		Fresh:         c.cfg.Registry.Storage().CurrentRevision,
		OnStart:       func() { listed = map[string]struct{}{} },
		OnSynced: func() {
			c.changes.Add(&event{typ: relisted, id: id, listed: listed})
			listed = nil
			select {
			case <-m.synced:
			default:
				close(m.synced)
			}
		},
		Each: func(items []watchcache.Item) {
			for _, it := range items {
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
				c.changes.Add(e)
			}
		},
		Ended: func(err error, retry time.Duration) {
			c.metrics.SyncError.Inc()
			c.log.Warn("garbage collector: watch of a resource ended; listing again", "resource", res.GroupResource(), "err", err, "after", retry)
		},
		Retry: monitorRetry,
	}
}
