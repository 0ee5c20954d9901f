package metrics

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// authDurationBuckets are kube's for authentication and authorization:
// 1 ms doubling 15 times.
var authDurationBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// The results of kube's authentication_attempts.
const (
	AuthnSuccess = "success" // credentials accepted
	AuthnFailure = "failure" // no credentials this server takes
	AuthnError   = "error"   // credentials rejected
)

// The results of kube's authorization_attempts_total.
const (
	AuthzAllowed   = "allowed"
	AuthzDenied    = "denied"
	AuthzNoOpinion = "no-opinion"
	AuthzError     = "error"
)

// authMetrics are kube-apiserver's authentication and authorization
// collectors (k8s.io/apiserver endpoints/filters/metrics.go and
// authorization/metrics), their children made once per result.
type authMetrics struct {
	users          map[string]prometheus.Counter // by userCategory
	authnAttempts  map[string]prometheus.Counter
	authnDurations map[string]prometheus.Observer
	authzAttempts  map[string]prometheus.Counter
	authzDurations map[string]prometheus.Observer
	authzDecisions *prometheus.CounterVec
}

// userCategories are the values of authenticated_user_requests' label.
var userCategories = []string{"admin", "client", "kube_proxy", "kubelet", "system:serviceaccount:kube-system:default", "email_id", "other"}

func newAuthMetrics(reg *prometheus.Registry) authMetrics {
	users := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "authenticated_user_requests",
		Help: "Counter of authenticated requests broken out by username.",
	}, []string{"username"})
	authnAttempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "authentication_attempts",
		Help: "Counter of authenticated attempts.",
	}, []string{"result"})
	authnDurations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "authentication_duration_seconds",
		Help:    "Authentication duration in seconds broken out by result.",
		Buckets: authDurationBuckets,
	}, []string{"result"})
	authzAttempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "authorization_attempts_total",
		Help: "Counter of authorization attempts broken down by result. It can be either 'allowed', 'denied', 'no-opinion' or 'error'.",
	}, []string{"result"})
	authzDurations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "authorization_duration_seconds",
		Help:    "Authorization duration in seconds broken out by result.",
		Buckets: authDurationBuckets,
	}, []string{"result"})
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_authorization_decisions_total",
		Help: "Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision.",
	}, []string{"type", "name", "decision"})
	reg.MustRegister(users, authnAttempts, authnDurations, authzAttempts, authzDurations, decisions)
	a := authMetrics{
		users: map[string]prometheus.Counter{}, authzDecisions: decisions,
		authnAttempts: map[string]prometheus.Counter{}, authnDurations: map[string]prometheus.Observer{},
		authzAttempts: map[string]prometheus.Counter{}, authzDurations: map[string]prometheus.Observer{},
	}
	for _, c := range userCategories {
		a.users[c] = users.WithLabelValues(c)
	}
	for _, r := range []string{AuthnSuccess, AuthnFailure, AuthnError} {
		a.authnAttempts[r], a.authnDurations[r] = authnAttempts.WithLabelValues(r), authnDurations.WithLabelValues(r)
	}
	for _, r := range []string{AuthzAllowed, AuthzDenied, AuthzNoOpinion, AuthzError} {
		a.authzAttempts[r], a.authzDurations[r] = authzAttempts.WithLabelValues(r), authzDurations.WithLabelValues(r)
	}
	return a
}

// Authenticated counts an authentication attempt: result is AuthnSuccess
// (then user is who), AuthnFailure or AuthnError.
func (m *Metrics) Authenticated(result, user string, elapsed time.Duration) {
	m.auth.authnAttempts[result].Inc()
	m.auth.authnDurations[result].Observe(elapsed.Seconds())
	if result == AuthnSuccess {
		m.auth.users[userCategory(user)].Inc()
	}
}

// Authorized counts an authorization attempt: result is one of the Authz
// results.
func (m *Metrics) Authorized(result string, elapsed time.Duration) {
	m.auth.authzAttempts[result].Inc()
	m.auth.authzDurations[result].Observe(elapsed.Seconds())
}

// AuthorizationDecisions returns what counts the terminal decisions
// ("allowed" or "denied") of the authorizer of type and name, as kube's
// apiserver_authorization_decisions_total (RBAC's name is "rbac"); the
// counters are looked up once.
func (m *Metrics) AuthorizationDecisions(authorizerType, name string) func(decision string) {
	allowed := m.auth.authzDecisions.WithLabelValues(authorizerType, name, "allowed")
	denied := m.auth.authzDecisions.WithLabelValues(authorizerType, name, "denied")
	return func(decision string) {
		if decision == "allowed" {
			allowed.Inc()
			return
		}
		denied.Inc()
	}
}

// userCategory is kube's compressUsername: a few known identities by
// name, "email_id" for an address, "other" for the rest, so that the
// label is bounded and names no user.
func userCategory(user string) string {
	switch {
	case slices.Contains(userCategories[:5], user):
		return user
	case strings.Contains(user, "@"):
		return "email_id"
	}
	return "other"
}
