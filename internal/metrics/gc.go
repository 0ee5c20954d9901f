package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// GC holds the garbage collector's collectors, named as
// kube-controller-manager names them: its work queues' workqueue_* series
// (labelled name="garbage_collector_attempt_to_delete" and so on) and
// garbagecollector_controller_resources_sync_error_total.
type GC struct {
	depth     *prometheus.GaugeVec
	adds      *prometheus.CounterVec
	retries   *prometheus.CounterVec
	work      *prometheus.HistogramVec
	SyncError prometheus.Counter
}

// GC returns the garbage collector's collectors, registered on first use;
// collectors made later (a restarted collector) share them.
func (m *Metrics) GC() *GC {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gc != nil {
		return m.gc
	}
	name := []string{"name"}
	g := &GC{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "workqueue_depth", Help: "Current depth of workqueue",
		}, name),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "workqueue_adds_total", Help: "Total number of adds handled by workqueue",
		}, name),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "workqueue_retries_total", Help: "Total number of retries handled by workqueue",
		}, name),
		work: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "workqueue_work_duration_seconds", Help: "How long in seconds processing an item from workqueue takes.",
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 10), // kube's
		}, name),
		SyncError: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "garbagecollector_controller_resources_sync_error_total",
			Help: "Number of garbage collector resources sync errors",
		}),
	}
	m.reg.MustRegister(g.depth, g.adds, g.retries, g.work, g.SyncError)
	m.gc = g
	return g
}

// Queue is the workqueue_* collectors of one queue.
type Queue struct {
	depth         prometheus.Gauge
	adds, retries prometheus.Counter
	work          prometheus.Observer
}

// Queue returns the collectors of the queue called name.
func (g *GC) Queue(name string) *Queue {
	return &Queue{
		depth: g.depth.WithLabelValues(name), adds: g.adds.WithLabelValues(name),
		retries: g.retries.WithLabelValues(name), work: g.work.WithLabelValues(name),
	}
}

// Added counts an add (a retry if retry) and records the queue's depth.
func (q *Queue) Added(depth int, retry bool) {
	q.adds.Inc()
	if retry {
		q.retries.Inc()
	}
	q.depth.Set(float64(depth))
}

// Done records an item's processing time and the queue's depth after it.
func (q *Queue) Done(depth int, took time.Duration) {
	q.work.Observe(took.Seconds())
	q.depth.Set(float64(depth))
}
