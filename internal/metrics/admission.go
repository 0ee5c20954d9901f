package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Admission holds kube-apiserver's admission webhook collectors
// (k8s.io/apiserver/pkg/admission/metrics, v0.37): the duration of each
// webhook call and of each admission step, the calls by answer, and the
// rejections by cause. Their labels are kube's.
type Admission struct {
	webhook    *prometheus.HistogramVec
	requests   *prometheus.CounterVec
	rejections *prometheus.CounterVec
	steps      *prometheus.HistogramVec
}

// maxCode is kube's bound on the code labels (codes above it count as it).
const maxCode = 600

func newAdmission(reg *prometheus.Registry) *Admission {
	a := &Admission{
		webhook: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_webhook_admission_duration_seconds",
			Help:    "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25},
		}, []string{"name", "type", "operation", "rejected"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_admission_webhook_request_total",
			Help: "Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
		}, []string{"name", "type", "operation", "code", "rejected"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_admission_webhook_rejection_count",
			Help: "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
		}, []string{"name", "type", "operation", "error_type", "rejection_code"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_step_admission_duration_seconds",
			Help:    "Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5},
		}, []string{"type", "operation", "rejected"}),
	}
	reg.MustRegister(a.webhook, a.requests, a.rejections, a.steps)
	return a
}

// Admission returns the admission collectors, registered on first use.
func (m *Metrics) Admission() *Admission {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.admission == nil {
		m.admission = newAdmission(m.reg)
	}
	return m.admission
}

// ObserveWebhook counts one webhook call; errorType, when not "", counts a
// rejection of that type.
func (a *Admission) ObserveWebhook(name, typ, operation string, seconds float64, rejected bool, code int, errorType string) {
	c := strconv.Itoa(min(code, maxCode))
	r := strconv.FormatBool(rejected)
	a.webhook.WithLabelValues(name, typ, operation, r).Observe(seconds)
	a.requests.WithLabelValues(name, typ, operation, c, r).Inc()
	if errorType != "" {
		a.rejections.WithLabelValues(name, typ, operation, errorType, c).Inc()
	}
}

// ObserveStep observes one admission step (all the webhooks of a kind).
func (a *Admission) ObserveStep(typ, operation string, seconds float64, rejected bool) {
	a.steps.WithLabelValues(typ, operation, strconv.FormatBool(rejected)).Observe(seconds)
}
