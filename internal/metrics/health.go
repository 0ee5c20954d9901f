package metrics

import "github.com/prometheus/client_golang/prometheus"

// HealthChecks returns the recorder of health check results, as
// component-base's slis: kubernetes_healthcheck{name,type} (1 passed, 0
// failed) and kubernetes_healthchecks_total{name,type,status} (status
// "success" or "error"), type being the endpoint ("livez", "readyz",
// "healthz"). kube-apiserver serves them at /metrics/slis; here they are
// part of /metrics. The collectors are registered on first use.
func (m *Metrics) HealthChecks() func(name, endpoint string, passed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.health.last == nil {
		m.health.last = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubernetes_healthcheck", Help: "This metric records the result of a single healthcheck.",
		}, []string{"name", "type"})
		m.health.total = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubernetes_healthchecks_total", Help: "This metric records the results of all healthcheck.",
		}, []string{"name", "type", "status"})
		m.reg.MustRegister(m.health.last, m.health.total)
	}
	h := m.health
	return func(name, endpoint string, passed bool) {
		status, v := "error", 0.0
		if passed {
			status, v = "success", 1
		}
		h.last.WithLabelValues(name, endpoint).Set(v)
		h.total.WithLabelValues(name, endpoint, status).Inc()
	}
}

// healthMetrics are the collectors of HealthChecks.
type healthMetrics struct {
	last  *prometheus.GaugeVec
	total *prometheus.CounterVec
}
