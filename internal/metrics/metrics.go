// Package metrics holds every Prometheus collector of listwatch serve, on
// a registry of its own, exposed at /metrics in Prometheus' text format.
//
// Metrics are named and labelled as kube-apiserver names them where the
// meaning is the same (apiserver_request_total, apiserver_watch_events_total,
// apiserver_watch_cache_resource_version, ...), so that dashboards and SLO
// queries written for Kubernetes work; those without a kube equivalent
// start with listwatch_. Label values come from bounded sets: verbs,
// scopes and codes are few, and resources are those the server serves
// (requests for anything else are labelled with an empty resource).
//
// Collectors are safe for concurrent use; the watch cache calls a
// resource's Observer methods with its locks held, and the bolt store's
// writer calls Commits.Committed between a commit and its answers, so each
// is an atomic update.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/listwatch/listwatch/controllermetrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Component is the component label of every request: kube-apiserver's own
// requests are labelled "apiserver" too.
const Component = "apiserver"

// requestDurationBuckets are kube-apiserver's, so that SLO queries on
// bucket boundaries (le="1") work unchanged.
var requestDurationBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// Metrics is the server's set of collectors.
type Metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	inflight  *prometheus.GaugeVec
	watch     watchMetrics
	auth      authMetrics
	// observers caches the request collectors: requestKey ->
	// *requestObserver.
	observers sync.Map

	mu         sync.Mutex
	resources  map[ResourceID]*Resource   // guarded by mu
	commits    *Commits                   // guarded by mu; nil until Commits
	leader     *prometheus.GaugeVec       // guarded by mu; nil until LeaderStatus
	gc         *GC                        // guarded by mu; nil until GC
	workqueues *controllermetrics.Metrics // guarded by mu; nil until Workqueues
	health     healthMetrics              // guarded by mu; zero until HealthChecks
	admission  *Admission                 // guarded by mu; nil until Admission
	conversion *Conversion                // guarded by mu; nil until Conversion
	policies   *Policies                  // guarded by mu; nil until Policies
}

// New returns the collectors, registered with the Go runtime and process
// collectors on a registry of their own.
func New() *Metrics {
	requestLabels := []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, append(requestLabels, "code")),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: requestDurationBuckets,
		}, requestLabels),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Number of requests being served, per request kind (not counting watches); kube-apiserver reports the largest number of the last second.",
		}, []string{"request_kind"}),
		watch:     newWatchMetrics(),
		resources: map[ResourceID]*Resource{},
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.requests, m.durations, m.inflight)
	m.watch.register(m.reg)
	m.auth = newAuthMetrics(m.reg)
	m.InFlight(false)
	m.InFlight(true)
	return m
}

// Handler serves the metrics in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Request labels one request, as kube-apiserver's metrics do.
type Request struct {
	// Verb is kube's metric verb: GET, LIST, WATCH, POST, PUT, PATCH,
	// APPLY, DELETE, or the method of a non-resource request.
	Verb        string
	DryRun      string
	Group       string
	Version     string
	Resource    string
	Subresource string
	// Scope is resource, namespace, cluster, or empty for non-resource
	// requests.
	Scope string
}

// ObserveRequest counts a finished request and its duration.
func (m *Metrics) ObserveRequest(r Request, code int, elapsed time.Duration) {
	o := m.requestObservers(r, code)
	o.duration.Observe(elapsed.Seconds())
	o.count.Inc()
}

// requestKey is a label set of the request metrics.
type requestKey struct {
	Request
	code int
}

// requestObserver holds the collectors of one requestKey.
type requestObserver struct {
	duration prometheus.Observer
	count    prometheus.Counter
}

// requestObservers returns the collectors of r and code, looked up in the
// vectors only the first time: WithLabelValues checks and hashes every
// label value and builds their slice on each call. The cache holds one
// entry per child of the vectors, which are bounded (see the package
// documentation).
func (m *Metrics) requestObservers(r Request, code int) *requestObserver {
	key := requestKey{r, code}
	if o, ok := m.observers.Load(key); ok {
		return o.(*requestObserver)
	}
	labels := []string{r.Verb, r.DryRun, r.Group, r.Version, r.Resource, r.Subresource, r.Scope, Component}
	o := &requestObserver{
		duration: m.durations.WithLabelValues(labels...),
		count:    m.requests.WithLabelValues(append(labels, strconv.Itoa(code))...),
	}
	actual, _ := m.observers.LoadOrStore(key, o)
	return actual.(*requestObserver)
}

// InFlight is the gauge of requests being served of a kind: readOnly or
// mutating.
func (m *Metrics) InFlight(mutating bool) prometheus.Gauge {
	if mutating {
		return m.inflight.WithLabelValues("mutating")
	}
	return m.inflight.WithLabelValues("readOnly")
}
