package metrics

import "github.com/prometheus/client_golang/prometheus"

// Audit exports the audit log's counts (events generated, events dropped)
// as kube-apiserver's apiserver_audit_event_total and
// apiserver_audit_error_total{plugin="log"}.
func (m *Metrics) Audit(counts func() (events, errors uint64)) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "apiserver_audit_event_total",
			Help: "Counter of audit events generated and sent to the audit backend.",
		}, func() float64 { e, _ := counts(); return float64(e) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "apiserver_audit_error_total",
			Help:        "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
			ConstLabels: prometheus.Labels{"plugin": "log"},
		}, func() float64 { _, e := counts(); return float64(e) }),
	)
}
