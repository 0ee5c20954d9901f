package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/internal/watchcache"
)

// watchMetrics are the collectors of watches and watch caches.
type watchMetrics struct {
	registered  *prometheus.GaugeVec     // group, version, kind
	events      *prometheus.CounterVec   // group, version, kind
	eventSizes  *prometheus.HistogramVec // group, version, kind
	terminated  *prometheus.CounterVec   // group, resource
	parked      *prometheus.CounterVec   // group, resource
	catchUps    *prometheus.CounterVec   // group, resource
	received    *prometheus.CounterVec   // resource
	capacity    *prometheus.GaugeVec     // resource
	revision    *prometheus.GaugeVec     // resource
	objects     *prometheus.GaugeVec     // resource
	dispatching *prometheus.HistogramVec // resource
	fallbacks   *prometheus.CounterVec   // resource, reason
	undecodable *prometheus.CounterVec   // resource
	ringBytes   *prometheus.GaugeVec     // resource
	ringBudget  *prometheus.GaugeVec     // resource
	evicted     *prometheus.CounterVec   // resource
	// budget is the server's watchcache.Budget, which the collectors of
	// budgets read.
	budget  *atomic.Pointer[watchcache.Budget]
	budgets []prometheus.Collector
}

// Why a list the watch cache would serve went to the store
// (Metrics.ListFallback).
const (
	// FallbackNoCache: no cache serves the definition the request was
	// prepared with (it changed while the request was in flight), or the
	// server is closing.
	FallbackNoCache = "no_cache"
	// FallbackNotReady: the cache had not loaded the resource in time.
	FallbackNotReady = "not_ready"
	// FallbackStale: the cache did not reach the revision asked for in time.
	FallbackStale = "stale"
)

func newWatchMetrics() watchMetrics {
	budget := new(atomic.Pointer[watchcache.Budget])
	fromBudget := func(name, help string, read func(*watchcache.Budget) int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if b := budget.Load(); b != nil {
				return float64(read(b))
			}
			return 0
		})
	}
	gvk := []string{"group", "version", "kind"}
	gr := []string{"group", "resource"}
	r := []string{"resource"}
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, r)
	}
	return watchMetrics{
		registered: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "apiserver_registered_watchers", Help: "Number of currently registered watchers for a given resources"}, gvk),
		events:     counter("apiserver_watch_events_total", "Number of events sent in watch clients", gvk),
		eventSizes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_watch_events_sizes", Help: "Watch event size distribution in bytes (of the event's object as JSON)",
			Buckets: prometheus.ExponentialBuckets(1024, 2, 8), // 1 KiB ... 128 KiB, as kube
		}, gvk),
		terminated: counter("apiserver_terminated_watchers_total", "Counter of watchers closed due to unresponsiveness; listwatch parks slow watchers instead, so it stays 0", gr),
		parked:     counter("listwatch_watch_parked_total", "Watchers parked because their queue was full; they catch up from the event ring or the store's history", gr),
		catchUps:   counter("listwatch_watch_catchups_total", "Parked watchers that caught up and rejoined the dispatch", gr),
		received:   counter("apiserver_watch_cache_events_received_total", "Counter of events received in watch cache broken by resource type.", r),
		capacity:   gauge("watch_cache_capacity", "Total capacity of watch cache broken by resource type."),
		revision:   gauge("apiserver_watch_cache_resource_version", "Current resource version of watch cache broken by resource type."),
		objects:    gauge("apiserver_storage_objects", "Number of stored objects at the time of last check split by kind (from the watch cache)."),
		dispatching: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "listwatch_watch_dispatch_duration_seconds", Help: "Time from the watch cache receiving a batch of events to having queued them on every watcher",
			Buckets: prometheus.ExponentialBuckets(10e-6, 4, 10), // 10 µs ... 2.6 s
		}, r),
		fallbacks:   counter("listwatch_watch_cache_list_fallback_total", "Lists the watch cache would have served that the store served instead, by resource and reason (no_cache, not_ready, stale)", []string{"resource", "reason"}),
		undecodable: counter("listwatch_watch_cache_undecodable_total", "Stored values the watch cache skipped because it cannot decode them, once per key and revision", r),
		ringBytes:   gauge("listwatch_watch_cache_ring_bytes", "Bytes the events in the watch cache's ring pin, by resource (their objects' JSON, the previous objects', and a fixed overhead per event)"),
		ringBudget:  gauge("listwatch_watch_cache_ring_budget_bytes", "The most bytes the watch cache's ring of a resource may pin"),
		evicted:     counter("listwatch_watch_cache_evicted_events_total", "Events the watch cache's ring dropped for bytes alone (its own budget or the server's) before its count and age bounds would have", r),
		budget:      budget,
		budgets: []prometheus.Collector{
			fromBudget("listwatch_watch_cache_budget_bytes", "The most bytes the rings of every resource's watch cache may pin together", (*watchcache.Budget).Max),
			fromBudget("listwatch_watch_cache_budget_used_bytes", "The bytes the rings of every resource's watch cache pin together", (*watchcache.Budget).Used),
			fromBudget("listwatch_watch_replay_budget_bytes", "The most bytes of objects that watchers replaying from the store's history may hold together", (*watchcache.Budget).MaxReplayed),
			fromBudget("listwatch_watch_replay_bytes", "The bytes of objects that watchers replaying from the store's history hold", (*watchcache.Budget).Replayed),
		},
	}
}

func (w *watchMetrics) register(reg *prometheus.Registry) {
	reg.MustRegister(w.registered, w.events, w.eventSizes, w.terminated, w.parked, w.catchUps,
		w.received, w.capacity, w.revision, w.objects, w.dispatching, w.fallbacks, w.undecodable,
		w.ringBytes, w.ringBudget, w.evicted)
	reg.MustRegister(w.budgets...)
}

// ResourceID names a served resource in metric labels.
type ResourceID struct {
	Group, Version, Kind string
	// Resource is the plural name.
	Resource string
}

// groupResource is the resource label of the watch cache's metrics, as
// kube's: "plural.group", or "plural" for the core group.
func (id ResourceID) groupResource() string {
	if id.Group == "" {
		return id.Resource
	}
	return id.Resource + "." + id.Group
}

// Resource holds the collectors of one resource's watches and watch cache;
// it is the cache's watchcache.Observer.
type Resource struct {
	registered  prometheus.Gauge
	events      prometheus.Counter
	eventSizes  prometheus.Observer
	parked      prometheus.Counter
	catchUps    prometheus.Counter
	received    prometheus.Counter
	capacity    prometheus.Gauge
	revision    prometheus.Gauge
	objects     prometheus.Gauge
	dispatching prometheus.Observer
	undecodable prometheus.Counter
	ringBytes   prometheus.Gauge
	ringBudget  prometheus.Gauge
	evicted     prometheus.Counter
}

var _ watchcache.Observer = (*Resource)(nil)

// Resource returns the collectors of a resource, creating its series (at
// 0) the first time.
func (m *Metrics) Resource(id ResourceID) *Resource {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.resources[id]; ok {
		return r
	}
	gr := id.groupResource()
	w := &m.watch
	w.terminated.WithLabelValues(id.Group, id.Resource)
	r := &Resource{
		registered:  w.registered.WithLabelValues(id.Group, id.Version, id.Kind),
		events:      w.events.WithLabelValues(id.Group, id.Version, id.Kind),
		eventSizes:  w.eventSizes.WithLabelValues(id.Group, id.Version, id.Kind),
		parked:      w.parked.WithLabelValues(id.Group, id.Resource),
		catchUps:    w.catchUps.WithLabelValues(id.Group, id.Resource),
		received:    w.received.WithLabelValues(gr),
		capacity:    w.capacity.WithLabelValues(gr),
		revision:    w.revision.WithLabelValues(gr),
		objects:     w.objects.WithLabelValues(gr),
		dispatching: w.dispatching.WithLabelValues(gr),
		undecodable: w.undecodable.WithLabelValues(gr),
		ringBytes:   w.ringBytes.WithLabelValues(gr),
		ringBudget:  w.ringBudget.WithLabelValues(gr),
		evicted:     w.evicted.WithLabelValues(gr),
	}
	m.resources[id] = r
	return r
}

// WatchEvents counts an event sent to n watchers, whose object is size
// bytes (0 for a bookmark, whose size is not observed).
func (r *Resource) WatchEvents(n, size int) {
	r.events.Add(float64(n))
	if size > 0 {
		for range n {
			r.eventSizes.Observe(float64(size))
		}
	}
}

// WatchEvent counts an event sent to a watcher: WatchEvents of one.
func (r *Resource) WatchEvent(size int) { r.WatchEvents(1, size) }

// SetCapacity records how many events the watch cache's ring holds at most.
func (r *Resource) SetCapacity(n int) { r.capacity.Set(float64(n)) }

// SetRingBudget records the most bytes the watch cache's ring may pin.
func (r *Resource) SetRingBudget(n int64) { r.ringBudget.Set(float64(n)) }

// WatchCacheBudget reports the server's watch cache budget.
func (m *Metrics) WatchCacheBudget(b *watchcache.Budget) { m.watch.budget.Store(b) }

// Applied implements watchcache.Observer.
func (r *Resource) Applied(events int, rev int64, objects int) {
	r.received.Add(float64(events))
	r.revision.Set(float64(rev))
	r.objects.Set(float64(objects))
}

// Dispatched implements watchcache.Observer.
func (r *Resource) Dispatched(d time.Duration) { r.dispatching.Observe(d.Seconds()) }

// Watchers implements watchcache.Observer.
func (r *Resource) Watchers(n int) { r.registered.Set(float64(n)) }

// Parked implements watchcache.Observer.
func (r *Resource) Parked() { r.parked.Inc() }

// CaughtUp implements watchcache.Observer.
func (r *Resource) CaughtUp() { r.catchUps.Inc() }

// Undecodable implements watchcache.Observer.
func (r *Resource) Undecodable() { r.undecodable.Inc() }

// RingBytes implements watchcache.Observer.
func (r *Resource) RingBytes(n int64) { r.ringBytes.Set(float64(n)) }

// Evicted implements watchcache.Observer.
func (r *Resource) Evicted(n int) { r.evicted.Add(float64(n)) }

// ListFallback counts a list of resource id that the watch cache would have
// served and the store served instead, for reason (a Fallback constant).
func (m *Metrics) ListFallback(id ResourceID, reason string) {
	m.watch.fallbacks.WithLabelValues(id.groupResource(), reason).Inc()
}

// forgetVersion deletes the series Resource made for id's version alone.
func (w *watchMetrics) forgetVersion(id ResourceID) {
	for _, v := range []deleter{w.registered, w.events, w.eventSizes} {
		v.DeleteLabelValues(id.Group, id.Version, id.Kind)
	}
}

// deleter is what forgetting needs of a metric vector.
type deleter interface{ DeleteLabelValues(...string) bool }

// forgetResource deletes the series Resource made for id's group and
// resource, which every version of it shares.
func (w *watchMetrics) forgetResource(id ResourceID) {
	for _, v := range []deleter{w.terminated, w.parked, w.catchUps} {
		v.DeleteLabelValues(id.Group, id.Resource)
	}
	gr := id.groupResource()
	for _, v := range []deleter{w.received, w.capacity, w.revision, w.objects, w.dispatching, w.undecodable, w.ringBytes, w.ringBudget, w.evicted} {
		v.DeleteLabelValues(gr)
	}
	w.fallbacks.DeletePartialMatch(prometheus.Labels{"resource": gr})
}

// Retain deletes the series of every resource that served says is no
// longer served (a CustomResourceDefinition deleted or a version dropped):
// its watch, watch cache and request series, so that definitions come and
// go without series piling up. A later request or cache of the same
// resource makes its series anew.
func (m *Metrics) Retain(served func(group, version, resource string) bool) {
	gone := map[ResourceID]bool{}
	m.observers.Range(func(k, _ any) bool {
		r := k.(requestKey).Request
		if r.Resource != "" && !served(r.Group, r.Version, r.Resource) {
			gone[ResourceID{Group: r.Group, Version: r.Version, Resource: r.Resource}] = true
			m.observers.Delete(k)
		}
		return true
	})
	m.mu.Lock()
	var dropped []ResourceID
	for id := range m.resources {
		if !served(id.Group, id.Version, id.Resource) {
			delete(m.resources, id)
			dropped = append(dropped, id)
		}
	}
	// A version dropped from a definition that serves others keeps the
	// series its versions share.
	left := map[string]bool{}
	for id := range m.resources {
		left[id.groupResource()] = true
	}
	m.mu.Unlock()
	for _, id := range dropped {
		m.watch.forgetVersion(id)
		if !left[id.groupResource()] {
			m.watch.forgetResource(id)
		}
	}
	for id := range gone {
		labels := prometheus.Labels{"group": id.Group, "version": id.Version, "resource": id.Resource}
		m.requests.DeletePartialMatch(labels)
		m.durations.DeletePartialMatch(labels)
	}
}
