package metrics

import (
	"github.com/listwatch/listwatch/client/workqueue"
	"github.com/listwatch/listwatch/controllermetrics"
	"github.com/prometheus/client_golang/prometheus"
)

// GC holds the garbage collector's collector,
// garbagecollector_controller_resources_sync_error_total, named as
// kube-controller-manager names it; its work queues record in Workqueues.
type GC struct {
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
	g := &GC{
		SyncError: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "garbagecollector_controller_resources_sync_error_total",
			Help: "Number of garbage collector resources sync errors",
		}),
	}
	m.reg.MustRegister(g.SyncError)
	m.gc = g
	return g
}

// Workqueues is where the server's work queues record their metrics
// (client/workqueue Options.Metrics, under each queue's Name): kube's
// workqueue_* series labelled by queue name, as kube-controller-manager's
// queues export them (name="garbage_collector_attempt_to_delete",
// "pvcprotection"), made by controllermetrics and registered on first
// use. Queues made later under the same name (a restarted controller)
// share their series.
func (m *Metrics) Workqueues() workqueue.MetricsProvider {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workqueues == nil {
		wq, err := controllermetrics.New(m.reg)
		if err != nil {
			panic(err) // a series registered twice: a bug
		}
		m.workqueues = wq
	}
	return m.workqueues
}
