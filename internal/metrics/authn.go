package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of an authentication, kube's labels: credentials accepted, none
// an authenticator took (failure), or credentials rejected (error).
const (
	AuthnSuccess = "success"
	AuthnFailure = "failure"
	AuthnError   = "error"
)

// authnMetrics are kube-apiserver's authentication collectors
// (endpoints/filters/metrics.go), under its names.
type authnMetrics struct {
	users    *prometheus.CounterVec
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newAuthnMetrics(reg *prometheus.Registry) authnMetrics {
	m := authnMetrics{
		users: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "authenticated_user_requests",
			Help: "Counter of authenticated requests broken out by username.",
		}, []string{"username"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "authentication_attempts",
			Help: "Counter of authenticated attempts.",
		}, []string{"result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "authentication_duration_seconds",
			Help:    "Authentication duration in seconds broken out by result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // kube's
		}, []string{"result"}),
	}
	reg.MustRegister(m.users, m.attempts, m.duration)
	return m
}

// ObserveAuthentication counts an authentication of result (AuthnSuccess,
// AuthnFailure, AuthnError) that took elapsed; user is who succeeded.
func (m *Metrics) ObserveAuthentication(result, user string, elapsed time.Duration) {
	if result == AuthnSuccess {
		m.authn.users.WithLabelValues(compressUsername(user)).Inc()
	}
	m.authn.attempts.WithLabelValues(result).Inc()
	m.authn.duration.WithLabelValues(result).Observe(elapsed.Seconds())
}

// compressUsername maps a user name onto kube's few label values, so that
// the label set stays bounded and no name is published: kube's known
// internal identities as themselves, what looks like an e-mail address as
// "email_id", anyone else as "other".
func compressUsername(name string) string {
	switch name {
	case "admin", "client", "kube_proxy", "kubelet", "system:serviceaccount:kube-system:default":
		return name
	}
	if strings.Contains(name, "@") {
		return "email_id"
	}
	return "other"
}
