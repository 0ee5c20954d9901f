// Command configmap-mirror is an example controller built on the
// controller, cache, events and leaderelection packages. It copies every
// ConfigMap labelled mirror.listwatch.io/to=<namespace> into that
// namespace, under the same name, keeps the copy's data and binaryData
// equal to the source's, and deletes the copy when the source goes or
// loses the label. The copy is annotated
// mirror.listwatch.io/from=<namespace>/<name>, so that a change to it (or
// its deletion) brings the source back into the queue and the drift is
// undone. Owner references cannot cross namespaces, hence the annotation
// and the deletes the controller makes itself.
//
// The controller writes with its own rights into any namespace a label
// names: a real one would restrict the namespaces it copies into.
//
// One informer caches every ConfigMap; workers reconcile sources from the
// cache, write copies by server-side apply (labels and annotations others
// put on a copy are left alone) and record events on the source. With
// --leader-elect, replicas share a Lease and only the leader reconciles; a
// replica that loses the lease stops its workers and exits.
//
// It connects as kubectl does: --kubeconfig, else $KUBECONFIG or
// ~/.kube/config (with --context and --server overriding), else the
// in-cluster service account, else http://127.0.0.1:8080.
//
//	configmap-mirror --kubeconfig ~/.kube/config --workers 2 --leader-elect --metrics-addr :8081
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/controller"
	"github.com/listwatch/listwatch/client/events"
	"github.com/listwatch/listwatch/client/leaderelection"
	"github.com/listwatch/listwatch/controllermetrics"
)

// options are the command line's.
type options struct {
	kubeconfig, context, server string
	workers                     int
	leaderElect                 bool
	leaseNamespace              string
	metricsAddr                 string
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "the kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	flag.StringVar(&o.context, "context", "", "the kubeconfig context to use")
	flag.StringVar(&o.server, "server", "", "the API server's URL, overriding the kubeconfig's")
	flag.IntVar(&o.workers, "workers", 2, "reconciling workers")
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "reconcile only while holding the Lease "+fieldManager)
	flag.StringVar(&o.leaseNamespace, "leader-election-namespace", "", "the namespace of the Lease (default the kubeconfig context's or the pod's, else default)")
	flag.StringVar(&o.metricsAddr, "metrics-addr", "", "serve /healthz, /readyz and /metrics at this address (off when empty)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		slog.Error("configmap-mirror", "err", err)
		os.Exit(1)
	}
}

// loadConfig finds the server and credentials as client-go's users do.
func loadConfig(o options) (*client.Config, error) {
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: o.kubeconfig, Context: o.context, Server: o.server})
	if !errors.Is(err, client.ErrNoConfig) {
		return cfg, err
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return client.InClusterConfig()
	}
	return client.ConfigForURL(client.DefaultServer), nil
}

func run(ctx context.Context, o options) error {
	cfg, err := loadConfig(o)
	if err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	// run's own context, so that an early return stops what it started.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	host, _ := os.Hostname()
	identity := fmt.Sprintf("%s_%d", host, os.Getpid())

	configMaps := client.NewResource[*ConfigMap](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "")
	inf := cache.NewInformer(configMaps, cache.InformerOptions[*ConfigMap]{
		Reflector: cache.ReflectorOptions{Name: "configmaps", UseWatchList: true},
		Indexers:  cache.Indexers[*ConfigMap]{mirrorOfIndex: mirrorOf},
	})
	// managedFields are never read: keep them out of the cache.
	if err := inf.SetTransform(func(cm *ConfigMap) *ConfigMap { cm.ManagedFields = nil; return cm }); err != nil {
		return err
	}
	recorder, err := events.Start(ctx, events.Config{Client: c, ReportingController: "listwatch.io/" + fieldManager, ReportingInstance: identity})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait(); <-recorder.Done() }()
	reg := prometheus.NewRegistry()
	metrics, err := controllermetrics.New(reg)
	if err != nil {
		return err
	}
	m := &mirror{configMaps: configMaps, indexer: inf.Indexer(), lister: inf.Lister(), recorder: recorder}
	ctl, err := controller.New(controller.Options{Name: fieldManager, MaxConcurrentReconciles: o.workers, Metrics: metrics}, m.reconcile)
	if err != nil {
		return err
	}
	if err := controller.Watches(ctl, inf, requestsFor); err != nil {
		return err
	}
	probes := controller.NewProbes(0)
	controller.AddInformer(probes, "configmaps", inf)
	controllermetrics.AddInformer(metrics, "configmaps", configMaps.GVR(), inf)

	wg.Go(func() { _ = inf.Run(ctx) })
	if o.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/healthz", probes.Healthz())
		mux.Handle("/readyz", probes.Readyz())
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		stopServing, err := serve(&wg, o.metricsAddr, mux)
		if err != nil {
			return err
		}
		defer stopServing()
	}
	if !o.leaderElect {
		return ctl.Start(ctx)
	}
	ns := cmp.Or(o.leaseNamespace, cfg.Namespace, "default")
	return lead(ctx, c, ns, identity, ctl)
}

// lead runs ctl while this replica holds the Lease. It returns nil when ctx
// ends, and an error when the lease is lost: the process exits rather
// than campaign again, as kube's controllers do, since its controller
// cannot be started twice.
func lead(ctx context.Context, c *client.Client, namespace, identity string, ctl *controller.Controller) error {
	var startErr error
	el, err := leaderelection.New(leaderelection.Config{
		Client: c, Namespace: namespace, Name: fieldManager, Identity: identity,
		ReleaseOnCancel: true, // a replica stopped by SIGTERM hands over at once
		Callbacks: leaderelection.Callbacks{
			OnStartedLeading: func(ctx context.Context) { startErr = ctl.Start(ctx) },
			OnNewLeader:      func(holder string) { slog.Info("leader", "identity", holder, "self", holder == identity) },
		},
	})
	if err != nil {
		return err
	}
	el.Run(ctx) // returns once OnStartedLeading has
	switch {
	case startErr != nil:
		return startErr
	case ctx.Err() == nil:
		return errors.New("lost the leader election lease")
	}
	return nil
}

// serve serves h at addr on a goroutine added to wg, until the returned
// function shuts it down (waiting up to 5 s for requests in flight).
func serve(wg *sync.WaitGroup, addr string, h http.Handler) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	slog.Info("serving probes and metrics", "addr", ln.Addr().String())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			slog.Error("probes and metrics", "err", err)
		}
	})
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
