// Package controllermetrics exports the metrics of controllers (package
// controller), their work queues and their informers to a Prometheus
// registry. It is apart from package controller so that a controller
// that does not use Prometheus does not import it.
package controllermetrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/controller"
	"github.com/listwatch/listwatch/client/workqueue"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics exports controllers', work queues' and informers' metrics to a
// Prometheus registry. One Metrics serves any number of controllers (each
// its own label values); give it to them in controller.Options.Metrics.
//
// Names and labels are those of controller-runtime
// (controller_runtime_reconcile_total{controller,result},
// _reconcile_errors_total, _reconcile_panics_total,
// _reconcile_time_seconds, _active_workers, _max_concurrent_reconciles),
// of kube's workqueue provider (workqueue_*{name}, component-base's
// buckets) and of client-go's informer store
// (informer_store_resource_version{name,group,version,resource}). client-go
// has no reflector metrics any more, so those are ours: informer_synced,
// reflector_last_progress_timestamp_seconds and reflector_lists_total,
// _watches_total, _relists_total, _errors_total (the counters of
// cache.ReflectorStats). Informer figures are read when collected.
type Metrics struct {
	reconcileTotal  *prometheus.CounterVec
	reconcileErrors *prometheus.CounterVec
	reconcilePanics *prometheus.CounterVec
	reconcileTime   *prometheus.HistogramVec
	activeWorkers   *prometheus.GaugeVec
	maxConcurrent   *prometheus.GaugeVec

	depth        *prometheus.GaugeVec
	adds         *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	workDuration *prometheus.HistogramVec
	retries      *prometheus.CounterVec

	read readCollector
}

var _ controller.MetricsProvider = (*Metrics)(nil)

// reconcileTimeBuckets are controller-runtime's, 5 ms to 60 s.
var reconcileTimeBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
	1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}

// queueBuckets are kube's workqueue buckets, 10 ns to 10 s.
var queueBuckets = prometheus.ExponentialBuckets(10e-9, 10, 10)

// New registers the metrics with reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	m := &Metrics{
		reconcileTotal:  counter("controller_runtime_reconcile_total", "Total number of reconciliations per controller", "controller", "result"),
		reconcileErrors: counter("controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller", "controller"),
		reconcilePanics: counter("controller_runtime_reconcile_panics_total", "Total number of reconciliation panics per controller", "controller"),
		reconcileTime:   histogram("controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller", reconcileTimeBuckets, "controller"),
		activeWorkers:   gauge("controller_runtime_active_workers", "Number of currently used workers per controller", "controller"),
		maxConcurrent:   gauge("controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per controller", "controller"),

		depth:        gauge("workqueue_depth", "Current depth of workqueue", "name"),
		adds:         counter("workqueue_adds_total", "Total number of adds handled by workqueue", "name"),
		latency:      histogram("workqueue_queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested.", queueBuckets, "name"),
		workDuration: histogram("workqueue_work_duration_seconds", "How long in seconds processing an item from workqueue takes.", queueBuckets, "name"),
		retries:      counter("workqueue_retries_total", "Total number of retries handled by workqueue", "name"),
		read:         newReadCollector(),
	}
	for _, c := range []prometheus.Collector{
		m.reconcileTotal, m.reconcileErrors, m.reconcilePanics, m.reconcileTime, m.activeWorkers, m.maxConcurrent,
		m.depth, m.adds, m.latency, m.workDuration, m.retries, &m.read,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// NewDepthMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

// NewAddsMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

// NewLatencyMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}

// NewUnfinishedWorkMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewUnfinishedWorkMetric(name string, read func() (unfinished, longest float64)) {
	m.read.set("workqueue "+name, func(ch chan<- prometheus.Metric) {
		u, l := read()
		ch <- prometheus.MustNewConstMetric(unfinishedDesc, prometheus.GaugeValue, u, name)
		ch <- prometheus.MustNewConstMetric(longestDesc, prometheus.GaugeValue, l, name)
	})
}

// AddInformer exports inf's figures under name and gvr's labels. A later
// informer of the same name replaces it.
func AddInformer[T client.Object](m *Metrics, name string, gvr client.GroupVersionResource, inf *cache.SharedIndexInformer[T]) {
	labels := []string{name, gvr.Group, gvr.Version, gvr.Resource}
	m.read.set("informer "+name, func(ch chan<- prometheus.Metric) {
		r := inf.Reflector()
		stats := r.Stats()
		synced := 0.0
		if inf.HasSynced() {
			synced = 1
		}
		var progress float64
		if t := r.LastSyncTime(); !t.IsZero() {
			progress = float64(t.UnixNano()) / 1e9
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		counter := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
		}
		if rv, ok := storeResourceVersion(r.LastSyncResourceVersion()); ok {
			gauge(storeRVDesc, rv)
		}
		gauge(syncedDesc, synced)
		gauge(progressDesc, progress)
		counter(listsDesc, stats.ListCalls)
		counter(watchesDesc, stats.WatchCalls)
		counter(relistsDesc, stats.Relists)
		counter(errorsDesc, stats.Errors)
	})
}

// storeResourceVersion is client-go's informer_store_resource_version
// value: the last 15 digits, so that the float64 is exact.
func storeResourceVersion(rv string) (float64, bool) {
	if rv == "" {
		return 0, false
	}
	if len(rv) > 15 {
		rv = rv[len(rv)-15:]
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	return float64(n), err == nil
}

var (
	unfinishedDesc = prometheus.NewDesc("workqueue_unfinished_work_seconds",
		"How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
		[]string{"name"}, nil)
	longestDesc = prometheus.NewDesc("workqueue_longest_running_processor_seconds",
		"How many seconds has the longest running processor for workqueue been running.", []string{"name"}, nil)

	informerLabels = []string{"name", "group", "version", "resource"}
	storeRVDesc    = prometheus.NewDesc("informer_store_resource_version",
		"The 15 least significant digits of the resource version of the store.", informerLabels, nil)
	syncedDesc = prometheus.NewDesc("informer_synced",
		"1 once the informer's first list is in its cache, else 0.", informerLabels, nil)
	progressDesc = prometheus.NewDesc("reflector_last_progress_timestamp_seconds",
		"When the reflector last had a list, watch event or bookmark (Unix seconds; 0: never).", informerLabels, nil)
	listsDesc = prometheus.NewDesc("reflector_lists_total",
		"List pages the reflector asked for.", informerLabels, nil)
	watchesDesc = prometheus.NewDesc("reflector_watches_total",
		"Watches the reflector opened, streaming lists included.", informerLabels, nil)
	relistsDesc = prometheus.NewDesc("reflector_relists_total",
		"Full lists after the first (each follows a 410 Expired).", informerLabels, nil)
	errorsDesc = prometheus.NewDesc("reflector_errors_total",
		"List and watch errors the reflector recovered from.", informerLabels, nil)
)

// readCollector collects figures read when Prometheus collects, from
// named readers. It is unchecked (Describe sends nothing) because its
// readers come and go.
type readCollector struct {
	mu      sync.Mutex
	readers map[string]func(chan<- prometheus.Metric) // guarded by mu
}

func newReadCollector() readCollector {
	return readCollector{readers: map[string]func(chan<- prometheus.Metric){}}
}

func (c *readCollector) set(key string, read func(chan<- prometheus.Metric)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readers[key] = read
}

// Describe implements prometheus.Collector.
func (c *readCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c *readCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	readers := make([]func(chan<- prometheus.Metric), 0, len(c.readers))
	for _, r := range c.readers {
		readers = append(readers, r)
	}
	c.mu.Unlock()
	for _, r := range readers {
		r(ch)
	}
}

// reconcileMetrics are one controller's series.
type reconcileMetrics struct {
	total          map[controller.ReconcileResult]prometheus.Counter
	errors, panics prometheus.Counter
	time           prometheus.Observer
	active         prometheus.Gauge
}

// NewReconcileMetrics implements controller.MetricsProvider. The series
// are created at zero, as controller-runtime does, so that rates exist
// before the first reconcile.
func (m *Metrics) NewReconcileMetrics(name string, workers int) controller.ReconcileMetrics {
	r := &reconcileMetrics{
		total:  map[controller.ReconcileResult]prometheus.Counter{},
		errors: m.reconcileErrors.WithLabelValues(name),
		panics: m.reconcilePanics.WithLabelValues(name),
		time:   m.reconcileTime.WithLabelValues(name),
		active: m.activeWorkers.WithLabelValues(name),
	}
	for _, result := range controller.ReconcileResults {
		r.total[result] = m.reconcileTotal.WithLabelValues(name, string(result))
	}
	r.active.Set(0)
	m.maxConcurrent.WithLabelValues(name).Set(float64(workers))
	return r
}

func (r *reconcileMetrics) Started() { r.active.Inc() }

func (r *reconcileMetrics) Finished(result controller.ReconcileResult, took time.Duration) {
	r.active.Dec()
	r.total[result].Inc()
	if result == controller.ResultError {
		r.errors.Inc()
	}
	r.time.Observe(took.Seconds())
}

func (r *reconcileMetrics) Panicked() { r.panics.Inc() }
