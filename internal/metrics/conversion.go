package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Conversion holds kube-apiserver's CRD conversion webhook collectors
// (k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/metrics.go):
// the duration of each conversion by definition and versions, and of each
// webhook request by result and failure type. Names, buckets and labels
// are kube's.
type Conversion struct {
	durations *prometheus.HistogramVec
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
}

func newConversion(reg *prometheus.Registry) *Conversion {
	c := &Conversion{
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_crd_conversion_webhook_duration_seconds",
			Help:    "CRD webhook conversion duration in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"crd_name", "from_version", "to_version", "succeeded"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_conversion_webhook_request_total",
			Help: "Counter for conversion webhook requests with success/failure and failure error type",
		}, []string{"result", "failure_type"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_conversion_webhook_duration_seconds",
			Help:    "Conversion webhook request latency",
			Buckets: []float64{0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 45, 60},
		}, []string{"result", "failure_type"}),
	}
	reg.MustRegister(c.durations, c.requests, c.latency)
	return c
}

// Conversion returns the conversion collectors, registered on first use.
func (m *Metrics) Conversion() *Conversion {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conversion == nil {
		m.conversion = newConversion(m.reg)
	}
	return m.conversion
}

// ObserveConversion records one call of a definition's conversion webhook;
// failureType is "" when it succeeded.
func (c *Conversion) ObserveConversion(crd, from, to string, seconds float64, failureType string) {
	result := "success"
	if failureType != "" {
		result = "failure"
	}
	c.durations.WithLabelValues(crd, from, to, strconv.FormatBool(failureType == "")).Observe(seconds)
	c.requests.WithLabelValues(result, failureType).Inc()
	c.latency.WithLabelValues(result, failureType).Observe(seconds)
}
