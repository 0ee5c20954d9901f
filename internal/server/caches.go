package server

import (
	"context"
	"errors"
	"maps"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/storage"
)

// caches holds one watch cache per served resource, started on first use
// and stopped as soon as its definition leaves the catalogue: a
// CustomResourceDefinition deleted or redefined, through this server or
// another one on the same store.
type caches struct {
	store   storage.Interface
	catalog *resource.Catalog
	cfg     watchcache.Config
	metrics *metrics.Metrics
	// wake, if set, is every cache's Config.WakePolled, given the cache's
	// metrics too.
	wake func(*watchcache.PollBatch, *metrics.Resource)
	stop chan struct{}  // closed by close: follow returns
	wg   sync.WaitGroup // follow, and the closing of replaced caches

	mu sync.Mutex // before catalog.mu
	// guarded by mu:
	byGVR  map[resource.GVR]cacheEntry
	closed bool
}

type cacheEntry struct {
	res   *resource.Resource // the definition the cache was made for
	cache *watchcache.Cache
}

// newCaches starts following catalog's changes; close stops it. wake, if
// not nil, is the caches' WakePolled, given each cache's metrics too.
func newCaches(store storage.Interface, catalog *resource.Catalog, cfg watchcache.Config, m *metrics.Metrics, wake func(*watchcache.PollBatch, *metrics.Resource)) *caches {
	cs := &caches{
		store: store, catalog: catalog, cfg: cfg, metrics: m, wake: wake,
		stop: make(chan struct{}), byGVR: map[resource.GVR]cacheEntry{},
	}
	cs.wg.Go(cs.follow)
	return cs
}

// follow calls retain at every change of the catalogue until close.
func (cs *caches) follow() {
	for {
		_, changed := cs.catalog.Generation()
		cs.retain()
		select {
		case <-changed:
		case <-cs.stop:
			return
		}
	}
}

// get returns res's cache, starting it, or restarting it if res was
// redefined (a CustomResourceDefinition changed). It returns nil once
// closed, and for a definition the catalogue no longer serves (a request
// that raced a change), so that no cache outlives its definition.
func (cs *caches) get(res *resource.Resource) *watchcache.Cache {
	if res == nil { // a resource no longer served (its definition deleted)
		return nil
	}
	gvr := resource.GVR{Group: res.Group, Version: res.Version, Plural: res.Plural}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil
	}
	e, ok := cs.byGVR[gvr]
	if ok && e.res == res {
		return e.cache
	}
	if cur, _ := cs.catalog.Get(gvr.Group, gvr.Version, gvr.Plural); cur != res {
		return nil
	}
	if ok {
		cs.wg.Go(e.cache.Close) // watchers of the old definition end; close waits
	}
	cfg := cs.cfg
	cfg.Storage, cfg.Prefix = cs.store, res.KeyPrefix("")
	cfg.Codec = cacheCodec(res)
	observer := cs.metrics.Resource(resourceID(res))
	cfg.Observer = observer
	if cs.wake != nil {
		cfg.WakePolled = func(b *watchcache.PollBatch) { cs.wake(b, observer) }
	}
	c := watchcache.New(cfg)
	observer.SetCapacity(c.Capacity())
	observer.SetRingBudget(c.MaxBytes())
	cs.byGVR[gvr] = cacheEntry{res: res, cache: c}
	return c
}

// cacheCodec is how res's cache decodes and encodes objects, and the
// paths of the fields registry.FieldSet gives, for the cache to read them
// from an object's JSON.
func cacheCodec(res *resource.Resource) watchcache.Codec {
	fields := map[string][]string{"metadata.name": {"metadata", "name"}}
	if res.Namespaced {
		fields["metadata.namespace"] = []string{"metadata", "namespace"}
	}
	maps.Copy(fields, res.FieldPaths)
	return watchcache.Codec{
		Decode:    func(ctx context.Context, kv storage.KV) (api.Object, error) { return cacheDecode(ctx, res, kv) },
		Fields:    fields,
		Fallbacks: res.FieldFallbacks,
		Defaults:  res.FieldDefaults,
		Encode:    func(kv storage.KV) ([]byte, bool) { return registry.JSON(res, kv) },
	}
}

// retain stops the caches of resources the catalogue no longer serves as
// they were, so that they do not keep an upstream watch for nothing, and
// drops the metric series of those it does not serve at all.
func (cs *caches) retain() {
	cs.mu.Lock()
	var stale []cacheEntry
	for gvr, e := range cs.byGVR {
		if cur, ok := cs.catalog.Get(gvr.Group, gvr.Version, gvr.Plural); !ok || cur != e.res {
			stale = append(stale, e)
			delete(cs.byGVR, gvr)
		}
	}
	// Under mu, so that get cannot make a cache's series while they go.
	cs.metrics.Retain(func(group, version, plural string) bool {
		_, ok := cs.catalog.Get(group, version, plural)
		return ok
	})
	cs.mu.Unlock()
	for _, e := range stale {
		e.cache.Close()
	}
}

// close stops every cache, ending their watchers, and waits for the
// caches being stopped and for follow.
func (cs *caches) close() {
	cs.mu.Lock()
	entries, wasClosed := cs.byGVR, cs.closed
	cs.byGVR, cs.closed = nil, true
	cs.mu.Unlock()
	if wasClosed {
		return
	}
	close(cs.stop)
	for _, e := range entries {
		e.cache.Close()
	}
	cs.wg.Wait()
}

// cacheDecode is registry.Decode for res's cache, which retries a value
// whose conversion failed (watchcache.Unconvertible) where it skips one
// that cannot be decoded.
func cacheDecode(ctx context.Context, res *resource.Resource, kv storage.KV) (api.Object, error) {
	obj, err := registry.Decode(ctx, res, kv)
	if err == nil {
		return obj, nil
	}
	if ce := (*registry.ConversionError)(nil); errors.As(err, &ce) {
		return nil, &watchcache.Unconvertible{Err: ce.Err}
	}
	return nil, err
}
