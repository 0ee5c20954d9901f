package server

import (
	"sync"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/storage"
)

// caches holds one watch cache per served resource, started on first use.
type caches struct {
	store   storage.Interface
	cfg     watchcache.Config
	metrics *metrics.Metrics

	mu sync.Mutex
	// guarded by mu:
	byGVR  map[resource.GVR]cacheEntry
	closed bool
}

type cacheEntry struct {
	res   *resource.Resource // the definition the cache was made for
	cache *watchcache.Cache
}

func newCaches(store storage.Interface, cfg watchcache.Config, m *metrics.Metrics) *caches {
	return &caches{store: store, cfg: cfg, metrics: m, byGVR: map[resource.GVR]cacheEntry{}}
}

// get returns res's cache, starting it, or restarting it if res was
// redefined (a CustomResourceDefinition changed). It returns nil once closed.
func (cs *caches) get(res *resource.Resource) *watchcache.Cache {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil
	}
	gvr := resource.GVR{Group: res.Group, Version: res.Version, Plural: res.Plural}
	if e, ok := cs.byGVR[gvr]; ok {
		if e.res == res {
			return e.cache
		}
		go e.cache.Close() // watchers of the old definition end
	}
	cfg := cs.cfg
	cfg.Storage, cfg.Prefix = cs.store, res.KeyPrefix("")
	cfg.Codec = watchcache.Codec{
		Decode: func(kv storage.KV) (api.Object, error) { return registry.Decode(res, kv) },
		Fields: func(o api.Object) map[string]string { return registry.FieldSet(res, o) },
		Encode: func(kv storage.KV) ([]byte, bool) { return registry.JSON(res, kv) },
	}
	observer := cs.metrics.Resource(resourceID(res))
	cfg.Observer = observer
	c := watchcache.New(cfg)
	observer.SetCapacity(c.Capacity())
	cs.byGVR[gvr] = cacheEntry{res: res, cache: c}
	return c
}

// retain stops the caches of resources the catalogue no longer serves as
// they were (a CustomResourceDefinition deleted or redefined), so that they
// do not keep an upstream watch for nothing.
func (cs *caches) retain(catalog *resource.Catalog) {
	cs.mu.Lock()
	var stale []cacheEntry
	for gvr, e := range cs.byGVR {
		if cur, ok := catalog.Get(gvr.Group, gvr.Version, gvr.Plural); !ok || cur != e.res {
			stale = append(stale, e)
			delete(cs.byGVR, gvr)
		}
	}
	cs.mu.Unlock()
	for _, e := range stale {
		e.cache.Close()
	}
}

// close stops every cache, ending their watchers.
func (cs *caches) close() {
	cs.mu.Lock()
	entries := cs.byGVR
	cs.byGVR, cs.closed = nil, true
	cs.mu.Unlock()
	for _, e := range entries {
		e.cache.Close()
	}
}
