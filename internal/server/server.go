// Package server is listwatch's Kubernetes REST API: it routes requests to
// the resources of its catalogue, reads and writes objects through the
// registry, negotiates JSON, YAML, Table and protobuf, serves discovery and
// health endpoints, and turns every failure into a Kubernetes Status. A
// watch is parsed and authorized here and streamed by internal/watchstream.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/admission/plugins"
	"github.com/listwatch/listwatch/internal/server/admission/podsecurity"
	"github.com/listwatch/listwatch/internal/server/admission/policies"
	"github.com/listwatch/listwatch/internal/server/admission/quota"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/audit"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/crd"
	"github.com/listwatch/listwatch/internal/server/leader"
	"github.com/listwatch/listwatch/internal/server/openapi"
	"github.com/listwatch/listwatch/internal/server/policy"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/server/serviceaccount"
	"github.com/listwatch/listwatch/internal/server/servicealloc"
	"github.com/listwatch/listwatch/internal/server/webhookclient"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/internal/watchstream"
	"github.com/listwatch/listwatch/storage"
)

// Config configures a Server.
type Config struct {
	// Storage holds every object; the server does not close it.
	Storage storage.Interface
	// StorageName names the storage's health checks: kube's "etcd" (and
	// "etcd-readiness") for etcd; "" means "storage".
	StorageName string
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means 3 MiB, as kube.
	MaxBodyBytes int64
	// Logger receives the access log and errors; nil means slog.Default(),
	// with the access log buffered on its way to log.Writer() (accesslog.go)
	// while slog.Default() is slog's own handler.
	Logger *slog.Logger
	// WatchCache configures every resource's watch cache (zero: defaults).
	WatchCache watchcache.Config
	// WatchCacheBudgetBytes bounds the bytes the rings of every resource's
	// watch cache pin together (watchcache.Budget), CRDs' included; 0
	// means watchcache.DefaultBudgetBytes. WatchCache.Budget, if set, is
	// used instead.
	WatchCacheBudgetBytes int64
	// WatchReplayBudgetBytes bounds the objects watchers replaying from
	// the store's history hold together; 0 means
	// watchcache.DefaultReplayBudgetBytes.
	WatchReplayBudgetBytes int64
	// BookmarkInterval is how often a watch that allows bookmarks gets one;
	// 0 means a minute, as kube-apiserver.
	BookmarkInterval time.Duration
	// NoWatchLanes serves every detached watch through the senders, none
	// from a lane (watchcache.WatchOptions.Lane): for A/B measurements.
	NoWatchLanes bool
	// MinRequestTimeout is the shortest a watch without timeoutSeconds
	// lasts; it ends at a random time in [min, 2*min). 0 means 30 minutes,
	// as kube-apiserver's --min-request-timeout.
	MinRequestTimeout time.Duration
	// Authenticator authenticates requests (401 for those it does not
	// accept, except health checks); nil means every request is anonymous.
	Authenticator authn.Authenticator
	// Authorizer decides what each authenticated user may do (403 for the
	// rest); nil means everything is allowed (authz.AlwaysAllow).
	Authorizer authz.Authorizer
	// RuleResolver lists a user's rules for SelfSubjectRulesReview; nil
	// means the Authorizer's own, if it is one too (AlwaysAllow is), else
	// the review answers that its rules are incomplete.
	RuleResolver authz.RuleResolver
	// WriteHook, if set, checks each write Authorizer allowed and learns
	// of every write (RBAC's escalation prevention and view).
	WriteHook WriteHook
	// WebhookCredentials are what calls of admission webhooks present to
	// their hosts, [0] validating and [1] mutating ones' (kube's
	// WebhookAdmissionConfiguration kubeConfigFile of each plugin).
	WebhookCredentials [2]*webhookclient.Kubeconfig
	// PodSecurity is the PodSecurity plugin's configuration (nil: kube's
	// defaults, everything privileged).
	PodSecurity *podsecurity.Config
	// QuotaLimited are the ResourceQuota plugin's limitedResources: what
	// a write may consume only under a quota.
	QuotaLimited []quota.Limited
	// AnonymousAuth makes a request without credentials (when an
	// Authenticator is configured) system:anonymous in
	// system:unauthenticated, for Authorizer to decide, instead of 401, as
	// kube's --anonymous-auth. Rejected credentials are still 401.
	AnonymousAuth bool
	// LoopbackOnly answers 403 to a request whose Host or Origin is not a
	// loopback name or address, so that a web page cannot reach an
	// anonymous server on loopback, through a DNS name rebound to 127.0.0.1
	// or a WebSocket.
	LoopbackOnly bool
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound concurrent
	// reads and writes (429 beyond; watches are not counted); 0 means 400
	// and 200, as kube-apiserver; negative means no limit. The bodies of
	// writes, read before they take a slot (RequestBodyTimeout), may hold
	// MaxMutatingRequestsInFlight x MaxBodyBytes at once (429 beyond): what
	// the slots bounded them to when they were read in a slot.
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	// RequestBodyTimeout bounds how long a write's body may take to arrive
	// once its headers have: the body is read before the request takes an
	// in-flight slot, so that a client trickling it holds none. 0 means a
	// minute, kube-apiserver's --request-timeout, after which it answers
	// such a request 504.
	RequestBodyTimeout time.Duration
	// Profiling serves /debug/pprof/.
	Profiling bool
	// AuditPolicy and AuditLog, both set, log the requests the policy
	// selects as kube-apiserver's audit log does (audit.go); the server
	// does not close AuditLog.
	AuditPolicy *audit.Policy
	AuditLog    *audit.Log
	// ServiceAccountTokens, if set, issues the tokens of the TokenRequest
	// subresource (serviceaccounts/<name>/token) and publishes its keys in
	// the OIDC discovery documents; nil serves neither.
	ServiceAccountTokens *serviceaccount.Tokens
	// Metrics are the collectors /metrics serves; nil means new ones. The
	// caller may have given some of them to the store (Metrics.Commits).
	Metrics *metrics.Metrics
	// Election tunes the election, among the servers sharing Storage, of
	// the one that runs the in-server controllers (ControllerLease): its
	// Identity, LeaseDuration, RenewDeadline, RetryPeriod and Now; the
	// server sets the rest. Zero: kube-controller-manager's defaults.
	Election leader.Config
	// EventTTL is how long an Event lives after its last write, as
	// kube-apiserver's --event-ttl; 0 means an hour.
	EventTTL time.Duration
	// NamespaceDeletionGracePeriod is how long the namespace controller
	// waits after a Terminating namespace's change before it deletes the
	// namespace's content (kube's namespaceDeletionGracePeriod); 0 means
	// 5 s. Tests shorten it.
	NamespaceDeletionGracePeriod time.Duration
	// ConcurrentGCSyncs is the garbage collector's workers per queue
	// (kube's --concurrent-gc-syncs); 0 runs no collector.
	ConcurrentGCSyncs int
	// Services are the ranges Services' cluster IPs and node ports are
	// given from (--service-cluster-ip-range, --service-node-port-range);
	// zero: kube-apiserver's defaults.
	Services servicealloc.Config
	// Advertise is the address and port the `kubernetes` Service's
	// endpoints name (kube-apiserver's --advertise-address and secure
	// port), which the leading server keeps; zero: no `kubernetes` Service.
	Advertise netip.AddrPort
	// RootCA is the CA bundle (PEM) of the API server that the
	// kube-root-ca.crt ConfigMap of every namespace holds, which pods'
	// token volumes project; nil publishes none (kube's publisher, never
	// without a CA, would publish an empty one), so that a server without
	// TLS keeps namespaces' ConfigMaps to the users' own.
	RootCA []byte
}

// Defaults of Config, as kube-apiserver's.
const (
	defaultMaxBodyBytes      = 3 << 20
	defaultBookmarkInterval  = time.Minute
	defaultMinRequestTimeout = 30 * time.Minute
)

// defaultEventTTL is kube-apiserver's --event-ttl.
const defaultEventTTL = time.Hour

// defaultRequestBodyTimeout is kube-apiserver's --request-timeout.
const defaultRequestBodyTimeout = time.Minute

// initialNamespaces exist from the start, as kube-apiserver's system
// namespaces (kube-node-lease holds nodes' heartbeat Leases).
var initialNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// stdHandler is slog's own default handler, which writes to log.Writer().
// The access log is buffered only while slog.Default() is still it: once
// slog.SetDefault installs another handler, log.Writer() makes one record
// of each Write, so a buffer of lines would reach that handler as one
// record of many.
var stdHandler = slog.Default().Handler()

// Server serves the API for one store.
type Server struct {
	cfg Config
	log *slog.Logger
	// requests receives the access log: log, or a buffered one (access).
	requests *slog.Logger
	access   *accessLog // nil unless requests buffers
	catalog  *resource.Catalog
	registry *registry.Registry
	caches   *caches
	crds     *crd.Sync
	// webhooks calls the admission webhooks of webhookSource's configurations.
	webhooks      *webhook.Dispatcher
	webhookSource *webhookSource
	// policies evaluates the ValidatingAdmissionPolicies, mutatingPolicies
	// the MutatingAdmissionPolicies.
	policies         *policies.Validator
	mutatingPolicies *policies.Mutator
	accounts         *defaultAccounts
	services         *servicealloc.Allocator
	mux              *http.ServeMux
	metrics          *metrics.Metrics
	readOnly         semaphore // bounds reads in flight
	mutating         semaphore // bounds writes in flight
	// plugins are kube's built-in admission plugins (ServiceAccount, ...).
	plugins *plugins.Chain
	// quotaLocks serialize the quota charges of a namespace's writes.
	quotaLocks quotaLocks
	// quotaInflight counts the charged writes not yet ended.
	quotaInflight quotaInflight
	// quotaWritten is the revision of the last quota written here.
	quotaWritten quotaWritten
	// bodies bounds the bodies read ahead of their slots.
	bodies *byteBudget
	// aggregation keeps the aggregated ClusterRoles' rules current.
	aggregation *aggregation
	// controllers run while this server leads the election; set in New.
	controllers []func(ctx context.Context)
	election    *election

	shutdown     chan struct{} // closed by Close: streams end
	shutdownOnce sync.Once
	streams      *watchstream.Engine // watches streamed on hijacked connections
}

// New returns a Server over cfg.Storage, creating the initial namespaces and
// kube's default RBAC policy if they do not exist yet (package policy).
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = defaultMaxBodyBytes
	}
	buffered := cfg.Logger == nil && slog.Default().Handler() == stdHandler
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.BookmarkInterval = cmp.Or(cfg.BookmarkInterval, defaultBookmarkInterval)
	cfg.MinRequestTimeout = cmp.Or(cfg.MinRequestTimeout, defaultMinRequestTimeout)
	cfg.RequestBodyTimeout = cmp.Or(cfg.RequestBodyTimeout, defaultRequestBodyTimeout)
	cfg.EventTTL = cmp.Or(cfg.EventTTL, defaultEventTTL)
	cfg.NamespaceDeletionGracePeriod = cmp.Or(cfg.NamespaceDeletionGracePeriod, namespaceDeletionGracePeriod)
	builtins := resource.Builtins()
	if cfg.ServiceAccountTokens != nil {
		addSubresource(builtins, "serviceaccounts", tokenSubresource)
	}
	addSubresource(builtins, "pods", bindingSubresource)
	addSubresource(builtins, "pods", evictionSubresource)
	crd.PruneBuiltins(builtins)
	checkWebhookConditions(builtins)
	checkPolicyExpressions(builtins)
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	mutating := cmp.Or(cfg.MaxMutatingRequestsInFlight, defaultMaxMutatingRequestsInFlight)
	s := &Server{
		cfg: cfg, log: cfg.Logger, requests: cfg.Logger, catalog: resource.NewCatalog(builtins...),
		shutdown: make(chan struct{}), metrics: cfg.Metrics,
		readOnly: newSemaphore(cmp.Or(cfg.MaxRequestsInFlight, defaultMaxRequestsInFlight)),
		mutating: newSemaphore(mutating),
		// What the slots held before bodies were read ahead of them.
		bodies: newByteBudget(int64(mutating) * cfg.MaxBodyBytes),
	}
	s.streams = watchstream.New(watchstream.Config{
		Log: cfg.Logger, BookmarkInterval: cfg.BookmarkInterval, NoLanes: cfg.NoWatchLanes,
		Detach: s.detachRequest,
	})
	s.registry = registry.New(cfg.Storage, cfg.Logger)
	s.webhookSource = newWebhookSource(s)
	s.webhooks = webhook.New(s.webhookSource, s.metrics.Admission(), cfg.Logger)
	policySource := &policySource{webhookSource: s.webhookSource}
	s.policies, s.mutatingPolicies = policies.New(policySource, s.metrics.Policies()), policies.NewMutator(policySource, s.metrics.Policies())
	s.plugins = plugins.New(newPluginSource(s), cfg.PodSecurity)
	elector, err := s.newElector()
	if err != nil {
		return nil, err
	}
	if err := s.ensureNamespaces(ctx); err != nil {
		return nil, err
	}
	if err := s.ensurePriorityClasses(ctx); err != nil {
		return nil, err
	}
	if err := policy.Ensure(ctx, s.registry, s.catalog, s.log); err != nil {
		return nil, err
	}
	if err := s.startCRDs(ctx); err != nil {
		return nil, err
	}
	accounts, err := startDefaultAccounts(ctx, s.registry, cfg.Storage, s.catalog, cfg.RootCA, cfg.Logger)
	if err != nil {
		s.crds.Close()
		return nil, err
	}
	s.accounts = accounts
	cfg.WatchCache.Logger = cmp.Or(cfg.WatchCache.Logger, cfg.Logger) // not slog.Default(): servers in one process each have theirs
	if s.services, err = s.startServiceAllocator(ctx); err != nil {
		s.crds.Close()
		s.accounts.close()
		return nil, err
	}
	if cfg.WatchCache.Budget == nil {
		cfg.WatchCache.Budget = watchcache.NewBudget(cmp.Or(cfg.WatchCacheBudgetBytes, watchcache.DefaultBudgetBytes), cmp.Or(cfg.WatchReplayBudgetBytes, watchcache.DefaultReplayBudgetBytes))
	}
	s.metrics.WatchCacheBudget(cfg.WatchCache.Budget)
	if cfg.AuditLog != nil {
		s.metrics.Audit(cfg.AuditLog.Counts)
	}
	s.caches = newCaches(cfg.Storage, s.catalog, cfg.WatchCache, s.metrics, s.streams.WakePolled) // last: nothing after it fails
	s.printStored(builtins)
	s.aggregation = s.startAggregation(ctx)
	s.controllers = append(s.controllers, s.expireEvents, s.policyStatus, s.repairServiceAllocations, s.keepQuotas, s.protectStorage, s.accounts.lead, s.deleteNamespaces)
	if cfg.Advertise.IsValid() {
		s.controllers = append(s.controllers, s.kubernetesService)
	}
	if cfg.ConcurrentGCSyncs > 0 {
		s.controllers = append(s.controllers, s.collect)
	}
	s.election = s.startElection(elector)
	if buffered {
		s.access = newAccessLog(log.Writer(), accessLogFlush)
		s.requests = s.access.logger()
	}
	s.routes()
	return s, nil
}

// Close ends every watch (cleanly, as at the end of its timeout) and stops
// the watch caches. Call it before http.Server.Shutdown, which waits for
// requests in flight; the store is the caller's to close after both.
func (s *Server) Close() {
	s.shutdownOnce.Do(func() { close(s.shutdown) })
	s.streams.Close()
	s.crds.Close()
	s.accounts.close()
	s.services.Close()
	s.aggregation.stop()
	s.election.stop()
	s.caches.close()
	if s.access != nil {
		s.access.close()
	}
}

// ensureNamespaces creates the initial namespaces that do not exist yet,
// concurrently: on a fresh store their creates share one group commit (one
// fsync instead of one each, a third of the start-up time on a busy disk),
// and a restart writes nothing.
func (s *Server) ensureNamespaces(ctx context.Context) error {
	ns, _ := s.catalog.Get("", "v1", "namespaces")
	errs := make([]error, len(initialNamespaces))
	var wg sync.WaitGroup
	for i, name := range initialNamespaces {
		if _, err := s.registry.GetStored(ctx, ns, "", name); err == nil {
			continue
		}
		wg.Go(func() { errs[i] = s.ensureNamespace(ctx, ns, name) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ensureNamespace creates namespace name unless it exists.
func (s *Server) ensureNamespace(ctx context.Context, ns *resource.Resource, name string) error {
	obj := api.Object{"metadata": map[string]any{"name": name}}
	_, err := s.registry.Create(ctx, ns, "", obj)
	if err != nil && !isReason(err, api.StatusReasonAlreadyExists) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.routeOperations()
	s.mux.HandleFunc("/version", s.serveVersion)
	oa := openapi.New(s.catalog)
	for _, p := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/"} {
		s.mux.Handle(p, oa)
	}
	s.routeOIDC()
	s.mux.HandleFunc("/api", s.serveAPI)
	s.mux.HandleFunc("/api/", s.serveAPI)
	s.mux.HandleFunc("/apis", s.serveAPI)
	s.mux.HandleFunc("/apis/", s.serveAPI)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { writeError(w, notFoundPath()) })
}

// Handler returns the server's HTTP handler: its routes behind its filters
// (filters.go).
func (s *Server) Handler() http.Handler { return s.filters(s.mux) }

func notFoundPath() *api.StatusError {
	e := apierror.NotFound(apierror.Target{})
	e.Status.Message = "the server could not find the requested resource"
	e.Status.Details = nil
	return e
}

// serveAPI routes /api and /apis paths to discovery or a resource.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	info, ok := requestInfoOf(r)
	switch {
	case !ok:
		writeError(w, notFoundPath())
	case !info.IsResource:
		s.serveDiscovery(w, r, info)
	default:
		s.serveResource(w, r, info)
	}
}

// serveVersion answers /version as kube-apiserver does, with the release
// whose API is served, so that clients check their version skew against it.
func (s *Server) serveVersion(w http.ResponseWriter, _ *http.Request) {
	major, minor, _ := strings.Cut(strings.TrimPrefix(openapi.KubeVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	writeJSON(w, http.StatusOK, mediaJSON, map[string]string{
		"major": major, "minor": minor, "gitVersion": openapi.KubeVersion + "+listwatch", "gitCommit": "listwatch",
		"gitTreeState": "clean", "buildDate": "2026-11-22T00:00:00Z", "goVersion": runtime.Version(), "compiler": runtime.Compiler,
		"platform": runtime.GOOS + "/" + runtime.GOARCH,
	})
}
