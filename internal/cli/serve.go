package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/internal/gctune"
	"github.com/listwatch/listwatch/internal/h2"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server"
	"github.com/listwatch/listwatch/internal/server/gc"
	"github.com/listwatch/listwatch/internal/server/leader"
	"github.com/listwatch/listwatch/internal/server/servicealloc"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/internal/watchstream"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/bolt"
	"github.com/listwatch/listwatch/storage/etcd"
)

// serveOptions are the flags of `listwatch serve`.
type serveOptions struct {
	listen        string
	dataDir       string
	storage       string
	etcdEndpoints []string
	etcdPrefix    string
	etcdTLS       etcd.TLSConfig
	tlsCert       string
	tlsKey        string
	clientCA      string
	rootCAFile    string
	tokenFile     string
	saTokens      serviceAccountOptions
	insecureAnon  bool
	secure        bool
	tlsSANs       []string
	authzModes    []string
	anonymousAuth bool
	maxInFlight   int
	maxMutating   int
	profiling     bool
	noFsync       bool
	compaction    storage.CompactionPolicy
	gcHeapFloor   int // MiB
	shutdownGrace time.Duration
	shutdownDelay time.Duration
	h2MaxStreams  uint32
	cpuProfile    string
	noWatchLanes  bool
	// Connection and request timeouts, as kube-apiserver's.
	readHeaderTimeout, idleTimeout, requestBodyTimeout time.Duration

	// The watch cache's byte bounds, in MiB: every resource's ring
	// together, and each one's.
	watchCacheMiB, watchCacheResourceMiB int64
	// What watchers replaying from the store hold together, in MiB.
	watchReplayMiB int64
	audit          auditOptions
	// The in-server controllers: their election among the servers on one
	// store, event expiry and namespace deletion's wait.
	election       leader.Config
	eventTTL       time.Duration
	namespaceGrace time.Duration
	// The garbage collector's workers per queue.
	concurrentGCSyncs int
	serviceIPRange    string
	nodePortRange     string
	// --admission-control-config-file
	admissionConfig string
}

func newServe() *cobra.Command {
	o := serveOptions{compaction: storage.DefaultCompactionPolicy()}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Kubernetes API on the embedded store (default) or etcd",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve on")
	f.StringVar(&o.dataDir, "data-dir", "listwatch-data", "directory of the embedded store (--storage=bolt), and of the CAs, certificates (pki/) and admin.kubeconfig that secure mode makes when no TLS flags are given")
	f.StringVar(&o.storage, "storage", "bolt", "storage backend: bolt (embedded) or etcd")
	f.StringSliceVar(&o.etcdEndpoints, "etcd-endpoints", []string{"http://127.0.0.1:2379"}, "etcd client URLs (--storage=etcd)")
	f.StringVar(&o.etcdPrefix, "etcd-prefix", etcd.DefaultPrefix, "prefix of every key in etcd")
	f.StringVar(&o.etcdTLS.CAFile, "etcd-cafile", "", "CA of the etcd cluster")
	f.StringVar(&o.etcdTLS.CertFile, "etcd-certfile", "", "client certificate for etcd")
	f.StringVar(&o.etcdTLS.KeyFile, "etcd-keyfile", "", "client certificate key for etcd")
	f.StringVar(&o.tlsCert, "tls-cert-file", "", "serve HTTPS with this certificate")
	f.StringVar(&o.tlsKey, "tls-private-key-file", "", "the key of --tls-cert-file")
	f.StringVar(&o.clientCA, "client-ca-file", "", "authenticate client certificates signed by a CA in this PEM file (CN is the user, O the groups); needs TLS")
	f.StringVar(&o.rootCAFile, "root-ca-file", "", "the CA bundle (PEM) that the kube-root-ca.crt ConfigMap of every namespace holds, which pods' token volumes mount, as kube-controller-manager's flag; default: the server CA secure mode makes, else none (an empty ca.crt)")
	f.StringVar(&o.tokenFile, "token-auth-file", "", `authenticate bearer tokens listed in this CSV file: token,user,uid,"group1,group2"`)
	o.saTokens.addFlags(f)
	f.StringSliceVar(&o.authzModes, "authorization-mode", nil, "ordered list of authorizers: RBAC, AlwaysAllow; default RBAC when --token-auth-file or --client-ca-file is set, else AlwaysAllow (loopback only)")
	f.BoolVar(&o.anonymousAuth, "anonymous-auth", true, "with authentication configured, serve requests without credentials as system:anonymous (group system:unauthenticated) for authorization to decide, instead of 401; off when the only authorization mode is AlwaysAllow")
	f.BoolVar(&o.insecureAnon, "insecure-allow-anonymous", false, "allow serving a non-loopback address without TLS and authentication")
	f.BoolVar(&o.secure, "secure", false, "serve with TLS and authentication on loopback too, as on any other address: without TLS flags, a CA, a serving certificate and an admin kubeconfig are made in --data-dir on first start and reused")
	f.StringSliceVar(&o.tlsSANs, "tls-san", nil, "another host name or IP address for the serving certificate secure mode makes (repeatable)")
	f.IntVar(&o.maxInFlight, "max-requests-inflight", 400, "most non-mutating requests served at once, beyond which 429 (watches are not counted); 0 for no limit")
	f.IntVar(&o.maxMutating, "max-mutating-requests-inflight", 200, "most mutating requests served at once, beyond which 429; 0 for no limit")
	f.DurationVar(&o.readHeaderTimeout, "read-header-timeout", 32*time.Second, "how long a connection may take to send a request's headers (and the TLS handshake) before it is closed; kube-apiserver's 32s")
	f.DurationVar(&o.idleTimeout, "idle-timeout", 90*time.Second, "how long a keep-alive connection may wait for its next request (HTTP/1.1), or have no stream (HTTP/2), before it is closed; kube-apiserver's 90s")
	f.DurationVar(&o.requestBodyTimeout, "request-body-timeout", time.Minute, "how long a write's body may take to arrive after its headers, beyond which 504; it is read before the write takes an in-flight slot (kube-apiserver's --request-timeout, 1m, bounds a whole request)")
	f.BoolVar(&o.profiling, "profiling", false, "serve /debug/pprof/ (to authenticated users when authentication is configured)")
	f.BoolVar(&o.noFsync, "unsafe-no-fsync", false, "do not fsync the embedded store (tests and benchmarks only: a crash can lose acknowledged writes)")
	f.Int64Var(&o.compaction.KeepRevisions, "compaction-keep-revisions", o.compaction.KeepRevisions, "history always kept, in revisions")
	f.DurationVar(&o.compaction.KeepDuration, "compaction-keep-duration", o.compaction.KeepDuration, "history always kept, in time")
	// Hidden: tests shorten it (with small keep flags) to compact within
	// a second of starting, to prove that clients relist after a 410.
	f.DurationVar(&o.compaction.Interval, "compaction-interval", o.compaction.Interval, "how often the compaction policy is applied")
	_ = f.MarkHidden("compaction-interval")
	f.DurationVar(&o.eventTTL, "event-ttl", time.Hour, "how long an event lives after its last write, as kube-apiserver's --event-ttl")
	// Hidden: kube's controller has no such flag; tests shorten it to see
	// namespace deletion finish within a second.
	f.DurationVar(&o.namespaceGrace, "namespace-deletion-grace-period", 5*time.Second, "how long namespace deletion waits after a Terminating namespace's change before it deletes the namespace's content")
	_ = f.MarkHidden("namespace-deletion-grace-period")
	f.DurationVar(&o.election.LeaseDuration, "leader-elect-lease-duration", leader.DefaultLeaseDuration, "how long, after the last change of the Lease kube-system/"+server.ControllerLease+" it has seen, a server waits before it takes the Lease over to run the in-server controllers (servers sharing an etcd elect one), as kube-controller-manager's flag")
	f.DurationVar(&o.election.RenewDeadline, "leader-elect-renew-deadline", leader.DefaultRenewDeadline, "how long the leading server tries to renew the Lease before it stops its controllers; less than the lease duration")
	f.DurationVar(&o.election.RetryPeriod, "leader-elect-retry-period", leader.DefaultRetryPeriod, "how often servers try to take, and the leader to renew, the Lease")
	f.DurationVar(&o.shutdownGrace, "shutdown-grace", 30*time.Second, "how long to wait for requests in flight on SIGTERM")
	f.DurationVar(&o.shutdownDelay, "shutdown-delay-duration", 0, "on SIGTERM, how long /readyz fails before the server stops accepting connections, so that load balancers stop sending it requests")
	f.Uint32Var(&o.h2MaxStreams, "http2-max-streams-per-connection", 0, fmt.Sprintf("the most streams a client may open on one HTTP/2 connection; 0 for the default (%d, kube-apiserver's)", h2.DefaultMaxConcurrentStreams))
	f.Int64Var(&o.watchCacheMiB, "watch-cache-budget-mib", watchcache.DefaultBudgetBytes>>20, "MiB the watch caches' event rings of every resource may pin together; beyond it the rings over an equal share drop their oldest events (watchers behind them read the store's history)")
	f.Int64Var(&o.watchCacheResourceMiB, "watch-cache-resource-budget-mib", watchcache.DefaultConfig().RingMaxBytes>>20, "MiB one resource's watch cache event ring may pin")
	f.Int64Var(&o.watchReplayMiB, "watch-replay-budget-mib", watchcache.DefaultReplayBudgetBytes>>20, "MiB of objects that watchers replaying from the store's history (behind the watch cache's ring) may hold together; beyond it each replays one event at a time")
	f.IntVar(&o.gcHeapFloor, "gc-heap-floor", 32, "MiB the Go heap may grow past its live size before a collection while the live heap is smaller (fewer collections for a small server); 0 for Go's default; ignored when GOGC is set")
	f.StringVar(&o.serviceIPRange, "service-cluster-ip-range", servicealloc.DefaultClusterIPRange.String(), "the CIDR Services' cluster IPs are given from, or two of different families (dual stack), as kube-apiserver's flag; every server sharing a store must be given the same")
	f.StringVar(&o.nodePortRange, "service-node-port-range", servicealloc.DefaultNodePortRange.String(), "the ports NodePort and LoadBalancer Services' node ports are given from, as kube-apiserver's flag")
	f.IntVar(&o.concurrentGCSyncs, "concurrent-gc-syncs", gc.DefaultWorkers, "the garbage collector's workers (kube-controller-manager's --concurrent-gc-syncs); 0 runs no garbage collector")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile to this file until shutdown (listwatch bench)")
	_ = f.MarkHidden("cpuprofile")
	f.BoolVar(&o.noWatchLanes, "no-watch-lanes", false, "serve cleartext watches without lanes (listwatch bench A/B)")
	_ = f.MarkHidden("no-watch-lanes")
	o.audit.addFlags(f)
	f.StringVar(&o.admissionConfig, "admission-control-config-file", "", "kube's AdmissionConfiguration file: the kubeconfig (kubeConfigFile) whose users give admission webhook calls client certificates and tokens, per host; PodSecurity's PodSecurityConfiguration (defaults, exemptions); ResourceQuota's limitedResources")
	return cmd
}

func (o *serveOptions) run(ctx context.Context) error {
	start := time.Now()
	if err := o.checkTimeouts(); err != nil {
		return err
	}
	if err := o.checkExposure(); err != nil {
		return err
	}
	if o.concurrentGCSyncs < 0 {
		return fmt.Errorf("--concurrent-gc-syncs must not be negative")
	}
	services, err := o.services()
	if err != nil {
		return err
	}
	if o.watchCacheMiB <= 0 || o.watchCacheResourceMiB <= 0 || o.watchReplayMiB <= 0 {
		return fmt.Errorf("--watch-cache-budget-mib, --watch-cache-resource-budget-mib and --watch-replay-budget-mib must be positive")
	}
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	auditPolicy, auditLog, err := o.audit.open(slog.Default())
	if err != nil {
		return err
	}
	if auditLog != nil {
		defer auditLog.Close() // last: the requests and watches that end at shutdown are logged
	}
	m := metrics.New()
	store, where, err := o.openStore(m)
	if err != nil {
		return err
	}
	defer store.Close()
	// After the store: the embedded one's lock keeps a second server on
	// the data directory from touching its certificates and keys.
	boot, err := o.bootstrapPKI()
	if err != nil {
		return err
	}
	rootCA, err := o.rootCA(boot)
	if err != nil {
		return err
	}
	saTokens, err := o.saTokens.tokens(o.dataDir)
	if err != nil {
		return err
	}
	authenticator, clientCAs, err := o.authentication(store, saTokens)
	if err != nil {
		return err
	}
	authorization, err := o.authorization(ctx, store, m, authenticator != nil)
	if err != nil {
		return err
	}
	defer authorization.close()
	slog.Info("authorization", "modes", strings.Join(authorization.modes, ","), "anonymous", authorization.anonymous || authenticator == nil)
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.listen, err)
	}
	defer ln.Close() // served, Serve closes it; on an error before, this does
	admissionCfg, err := readAdmissionConfig(o.admissionConfig)
	if err != nil {
		return err
	}
	srv, err := server.New(ctx, server.Config{
		Storage: store, StorageName: o.storageName(), Authenticator: authenticator, Profiling: o.profiling, Metrics: m, ServiceAccountTokens: saTokens,
		Authorizer: authorization.authorizer, RuleResolver: authorization.rules, WriteHook: authorization.hook, AnonymousAuth: authorization.anonymous,
		LoopbackOnly:        authenticator == nil && loopbackListen(o.listen),
		MaxRequestsInFlight: inFlightLimit(o.maxInFlight), MaxMutatingRequestsInFlight: inFlightLimit(o.maxMutating),
		WatchCache: watchcache.Config{RingMaxBytes: o.watchCacheResourceMiB << 20}, WatchCacheBudgetBytes: o.watchCacheMiB << 20,
		WatchReplayBudgetBytes: o.watchReplayMiB << 20, RequestBodyTimeout: o.requestBodyTimeout, NoWatchLanes: o.noWatchLanes,
		AuditPolicy: auditPolicy, AuditLog: auditLog, Election: o.election, EventTTL: o.eventTTL,
		NamespaceDeletionGracePeriod: o.namespaceGrace,
		ConcurrentGCSyncs:            o.concurrentGCSyncs, Services: services, Advertise: advertised(ln.Addr()), RootCA: rootCA,
		WebhookCredentials: admissionCfg.webhookCredentials, PodSecurity: admissionCfg.podSecurity, QuotaLimited: admissionCfg.quotaLimited,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	hs := o.httpServer(srv.Handler())
	if o.tlsCert != "" { // TLS watches over HTTP/1.1 are detached, as cleartext ones
		ln = watchstream.Listener(ln)
		hs.ConnContext = watchstream.ConnContext
	}
	unused := server.NewUnusedConns()
	hs.ConnState = unused.Track
	if boot != nil { // renewed while serving, as it nears its end
		hs.TLSConfig.GetCertificate = boot.Serving.GetCertificate
	}
	if clientCAs != nil { // asked for, verified by the authenticator: a request may present a token instead
		hs.TLSConfig.ClientAuth, hs.TLSConfig.ClientCAs = tls.RequestClientCert, clientCAs
	}
	var wg sync.WaitGroup
	background, stopBackground := context.WithCancel(ctx) // the compactor and the GC floor
	defer func() { stopBackground(); wg.Wait() }()
	wg.Go(func() { storage.NewCompactor(store, o.compaction).Run(background) })
	wg.Go(func() { gctune.Floor(background, uint64(max(o.gcHeapFloor, 0))<<20) })

	kubeconfig, err := o.writeKubeconfig(boot, ln.Addr())
	if err != nil {
		ln.Close()
		return err
	}
	o.logMode(authenticator, boot, kubeconfig)
	scheme := "http"
	if o.tlsCert != "" {
		scheme = "https"
	}
	slog.Info("listwatch serving", "url", scheme+"://"+ln.Addr().String(), "storage", o.storage, "data", where, "startup", time.Since(start).Round(time.Microsecond))
	errc := make(chan error, 1)
	go func() { errc <- o.serveOn(hs, ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	slog.Info("shutting down", "grace", o.shutdownGrace, "delay", o.shutdownDelay)
	srv.Close() // watches end cleanly and /readyz fails; then Shutdown waits for the rest
	time.Sleep(o.shutdownDelay)
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownGrace)
	defer cancel()
	unused.Close()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func (o *serveOptions) serveOn(hs *http.Server, ln net.Listener) error {
	var err error
	switch {
	case hs.TLSConfig.GetCertificate != nil:
		err = hs.ServeTLS(ln, "", "")
	case o.tlsCert != "":
		err = hs.ServeTLS(ln, o.tlsCert, o.tlsKey)
	default:
		err = hs.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// httpServer serves HTTP/1.1 and HTTP/2: over TLS by ALPN, and in cleartext
// with prior knowledge (h2c), which net/http recognises by its preface and
// hands over.
func (o *serveOptions) httpServer(h http.Handler) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	hs := &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: o.readHeaderTimeout,
		IdleTimeout:       o.idleTimeout,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
		// No ReadTimeout: net/http keeps that deadline on the connection
		// while the handler runs and cancels its context when it passes (a
		// long list); a write's body has its own (RequestBodyTimeout).
	}
	// HTTP/2, over TLS and h2c, is served by internal/h2 rather than
	// net/http's: its watches are detached as HTTP/1.1 ones are.
	(&h2.Server{ShutdownGrace: o.shutdownGrace, MaxConcurrentStreams: o.h2MaxStreams, IdleTimeout: o.idleTimeout}).Configure(hs)
	return hs
}

// checkExposure refuses to serve without TLS and authentication a
// non-loopback address (or any with --secure) unless the risk is
// explicitly accepted. Without TLS flags, secure mode makes its own
// (bootstrapped).
func (o *serveOptions) checkExposure() error {
	if err := o.checkTLS(); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return fmt.Errorf("--listen %q: %w", o.listen, err)
	}
	if o.secure && o.insecureAnon {
		return errors.New("--secure and --insecure-allow-anonymous contradict each other")
	}
	if !o.secure && loopbackListen(o.listen) || o.bootstrapped() || o.insecureAnon {
		return nil
	}
	if o.tokenFile != "" || o.clientCA != "" {
		return nil
	}
	return fmt.Errorf("refusing to serve %s with TLS but without authentication: add --token-auth-file or --client-ca-file, or leave out the TLS flags to have a CA and an admin kubeconfig made in --data-dir, or --insecure-allow-anonymous to accept the risk", o.listen)
}

// checkTimeouts refuses a timeout that is not positive: net/http, h2 and
// the server would each read zero or less their own way (none, their
// default, or every connection cut at once).
func (o *serveOptions) checkTimeouts() error {
	for flag, d := range map[string]time.Duration{
		"--read-header-timeout": o.readHeaderTimeout, "--idle-timeout": o.idleTimeout, "--request-body-timeout": o.requestBodyTimeout,
		"--event-ttl": o.eventTTL, "--namespace-deletion-grace-period": o.namespaceGrace, "--leader-elect-lease-duration": o.election.LeaseDuration,
		"--leader-elect-renew-deadline": o.election.RenewDeadline, "--leader-elect-retry-period": o.election.RetryPeriod,
	} {
		if d <= 0 {
			return fmt.Errorf("%s %v: must be positive", flag, d)
		}
	}
	return nil
}

// loopbackListen says whether a --listen address is on loopback only.
func loopbackListen(listen string) bool {
	host, _, _ := net.SplitHostPort(listen)
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// checkTLS checks that the TLS flags come together.
func (o *serveOptions) checkTLS() error {
	switch {
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return errors.New("--tls-cert-file and --tls-private-key-file must be given together")
	case o.clientCA != "" && o.tlsCert == "":
		return errors.New("--client-ca-file needs TLS: --tls-cert-file and --tls-private-key-file")
	}
	return nil
}

// storageName names the storage's health checks: kube's "etcd" for etcd.
func (o *serveOptions) storageName() string {
	if strings.EqualFold(o.storage, "etcd") {
		return "etcd"
	}
	return ""
}

// openStore opens the configured backend and says where its data lives;
// the embedded store reports its commits to m.
func (o *serveOptions) openStore(m *metrics.Metrics) (storage.Interface, string, error) {
	switch strings.ToLower(o.storage) {
	case "bolt":
		if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
			return nil, "", fmt.Errorf("creating data directory: %w", err)
		}
		s, err := bolt.Open(o.dataDir, bolt.Options{NoSync: o.noFsync, CommitObserver: m.Commits()})
		if err != nil {
			return nil, "", fmt.Errorf("opening the embedded store in %s: %w", o.dataDir, err)
		}
		return s, o.dataDir, nil
	case "etcd":
		s, err := etcd.New(etcd.Config{Endpoints: o.etcdEndpoints, Prefix: o.etcdPrefix, TLS: o.etcdTLS})
		if err != nil {
			return nil, "", fmt.Errorf("connecting to etcd %v: %w", o.etcdEndpoints, err)
		}
		return s, strings.Join(o.etcdEndpoints, ",") + o.etcdPrefix, nil
	}
	return nil, "", fmt.Errorf("--storage %q: must be bolt or etcd", o.storage)
}

// services parses the Service ranges' flags.
func (o *serveOptions) services() (servicealloc.Config, error) {
	ranges, err := servicealloc.ParseClusterIPRanges(o.serviceIPRange)
	if err != nil {
		return servicealloc.Config{}, fmt.Errorf("--%w", err)
	}
	ports, err := servicealloc.ParsePortRange(o.nodePortRange)
	if err != nil {
		return servicealloc.Config{}, fmt.Errorf("--service-node-port-range: %w", err)
	}
	return servicealloc.Config{ClusterIPRanges: ranges, NodePorts: ports}, nil
}

// advertised is the address the `kubernetes` Service's endpoints name for
// a server listening on addr: addr itself, or for an unspecified address
// (all interfaces) the first global unicast address of an interface, as
// kube-apiserver's default --advertise-address (ChooseHostInterface),
// else loopback.
func advertised(addr net.Addr) netip.AddrPort {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || !ap.Addr().IsUnspecified() {
		return ap
	}
	ip := netip.IPv6Loopback()
	if ap.Addr().Unmap().Is4() {
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().IsGlobalUnicast() && p.Addr().Is4() == ip.Is4() {
				ip = p.Addr()
				break
			}
		}
	}
	return netip.AddrPortFrom(ip, ap.Port())
}
