package metrics

import "github.com/prometheus/client_golang/prometheus"

// Policies holds kube-apiserver's admission policy collectors
// (k8s.io/apiserver/pkg/admission/plugin/policy/validating/metrics and
// .../mutating/metrics, v0.37): checks of ValidatingAdmissionPolicies by
// policy, binding, error type and enforcement action, and of
// MutatingAdmissionPolicies by policy, binding and error type, each with
// its duration. Names, buckets and labels are kube's.
type Policies struct {
	validating, mutating               *prometheus.CounterVec
	validatingLatency, mutatingLatency *prometheus.HistogramVec
}

// policyBuckets are kube's: from a CEL access (180 ns) to an expression
// near its cost limit (760 ms).
var policyBuckets = []float64{0.0000005, 0.001, 0.01, 0.1, 1.0}

func newPolicies(reg *prometheus.Registry) *Policies {
	validating := []string{"policy", "policy_binding", "error_type", "enforcement_action"}
	mutating := []string{"policy", "policy_binding", "error_type"}
	p := &Policies{
		validating: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_validating_admission_policy_check_total",
			Help: "Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.",
		}, validating),
		validatingLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_validating_admission_policy_check_duration_seconds",
			Help:    "Validation admission latency for individual validation expressions in seconds, labeled by policy and further including binding and enforcement action taken.",
			Buckets: policyBuckets,
		}, validating),
		mutating: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_mutating_admission_policy_check_total",
			Help: "Mutation admission policy check total, labeled by policy and further identified by binding.",
		}, mutating),
		mutatingLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_mutating_admission_policy_check_duration_seconds",
			Help:    "Mutation admission latency for individual mutation expressions in seconds, labeled by policy and binding.",
			Buckets: policyBuckets,
		}, mutating),
	}
	reg.MustRegister(p.validating, p.validatingLatency, p.mutating, p.mutatingLatency)
	return p
}

// Policies returns the admission policy collectors, registered on first
// use.
func (m *Metrics) Policies() *Policies {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.policies == nil {
		m.policies = newPolicies(m.reg)
	}
	return m.policies
}

// ObserveValidation counts one check of a validation: action is kube's
// enforcement action (allow, deny, warn or audit).
func (p *Policies) ObserveValidation(policy, binding, errorType, action string, seconds float64) {
	p.validating.WithLabelValues(policy, binding, errorType, action).Inc()
	p.validatingLatency.WithLabelValues(policy, binding, errorType, action).Observe(seconds)
}

// ObserveMutation counts one mutation.
func (p *Policies) ObserveMutation(policy, binding, errorType string, seconds float64) {
	p.mutating.WithLabelValues(policy, binding, errorType).Inc()
	p.mutatingLatency.WithLabelValues(policy, binding, errorType).Observe(seconds)
}
