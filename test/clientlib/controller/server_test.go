package controller_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/controller"
	"github.com/listwatch/listwatch/controllermetrics"
	"github.com/listwatch/listwatch/internal/cuttest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// configMap is the part of a v1 ConfigMap the tests read and write.
type configMap struct {
	APIVersion string            `json:"apiVersion,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Metadata   api.ObjectMeta    `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
}

func (c *configMap) GetName() string              { return c.Metadata.Name }
func (c *configMap) GetNamespace() string         { return c.Metadata.Namespace }
func (c *configMap) GetResourceVersion() string   { return c.Metadata.ResourceVersion }
func (c *configMap) GetLabels() map[string]string { return c.Metadata.Labels }

func configMapOwners(c *configMap) []api.OwnerReference { return c.Metadata.OwnerReferences }

// deadline bounds every wait of these tests.
const deadline = 30 * time.Second

// env is a server with two informers of ConfigMaps: parents (role=parent)
// and children (role=child), run until the test ends.
type env struct {
	configMaps        *client.Resource[*configMap]
	parents, children *cache.SharedIndexInformer[*configMap]
	ctx               context.Context // the informers'; done when the test ends
	probes            *controller.Probes
}

func startEnv(t *testing.T) *env {
	t.Helper()
	srv := cuttest.StartServer(t)
	cl, err := client.New(client.ConfigForURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	cms := client.NewResource[*configMap](cl, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "default")
	e := &env{configMaps: cms}
	quiet := cache.ReflectorOptions{WatchErrorHandler: func(err error) { t.Logf("%v", err) }}
	e.parents = cache.NewInformer(cms, cache.InformerOptions[*configMap]{Reflector: withSelector(quiet, "role=parent")})
	e.children = cache.NewInformer(cms, cache.InformerOptions[*configMap]{Reflector: withSelector(quiet, "role=child")})
	e.probes = controller.NewProbes(0)
	controller.AddInformer(e.probes, "parents", e.parents)
	controller.AddInformer(e.probes, "children", e.children)
	probeServer := httptest.NewServer(e.probes.Readyz())
	t.Cleanup(probeServer.Close)
	if code := get(t, probeServer.URL); code != http.StatusInternalServerError {
		t.Errorf("readyz before the informers run = %d, want 500", code)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.parents.Run(ctx) })
	wg.Go(func() { _ = e.children.Run(ctx) })
	e.ctx = ctx
	t.Cleanup(func() { cancel(); wg.Wait() })
	syncCtx, cancelSync := context.WithTimeout(ctx, deadline)
	defer cancelSync()
	if !cache.WaitForCacheSync(syncCtx, e.parents, e.children) {
		t.Fatal("informers not synced")
	}
	if code := get(t, probeServer.URL); code != http.StatusOK {
		t.Errorf("readyz after sync = %d, want 200", code)
	}
	return e
}

// get returns the status code of a GET of url.
func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func withSelector(o cache.ReflectorOptions, sel string) cache.ReflectorOptions {
	o.LabelSelector = sel
	return o
}

func (e *env) create(t *testing.T, name, role string) *configMap {
	t.Helper()
	cm := &configMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: api.ObjectMeta{Name: name, Labels: map[string]string{"role": role}}}
	got, err := e.configMaps.Create(e.ctx, cm, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestControllerAgainstServer runs a controller that keeps a child
// ConfigMap for every parent: it creates the children, recreates one that
// is deleted (an event on an owned object enqueues its owner), and shuts
// down cleanly.
func TestControllerAgainstServer(t *testing.T) {
	e := startEnv(t)
	parent := e.create(t, "p1", "parent")
	reconciled := make(chan controller.Request, 100)
	reconcile := func(ctx context.Context, req controller.Request) (controller.Result, error) {
		defer func() { reconciled <- req }()
		p, ok := e.parents.Lister().Namespace(req.Namespace).Get(req.Name)
		if !ok {
			return controller.Result{}, nil
		}
		child := &configMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: api.ObjectMeta{
			Name: req.Name + "-child", Labels: map[string]string{"role": "child"},
			OwnerReferences: []api.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: p.Metadata.Name, UID: p.Metadata.UID, Controller: new(true)}},
		}}
		if _, err := e.configMaps.Create(ctx, child, client.WriteOptions{}); err != nil && !client.IsAlreadyExists(err) {
			return controller.Result{}, err
		}
		return controller.Result{}, nil
	}
	reg := prometheus.NewRegistry()
	metrics, err := controllermetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	controllermetrics.AddInformer(metrics, "children", client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, e.children)
	c, err := controller.New(controller.Options{Name: "children", MaxConcurrentReconciles: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics}, reconcile)
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.For(c, e.parents); err != nil {
		t.Fatal(err)
	}
	if err := controller.Owns(c, e.children, controller.OwnerType{Kind: "ConfigMap"}, configMapOwners); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	errc := make(chan error, 1)
	go func() { errc <- c.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Start = %v", err)
		}
	}()

	want := controller.Request{Namespace: "default", Name: "p1"}
	waitFor(t, reconciled, want)
	child := waitForChild(t, e, "p1-child", "")
	if refs := child.Metadata.OwnerReferences; len(refs) != 1 || refs[0].UID != parent.Metadata.UID {
		t.Fatalf("child's owners = %+v", refs)
	}
	// The child's own ADDED enqueued its owner again.
	waitFor(t, reconciled, want)

	if err := e.configMaps.Delete(e.ctx, "p1-child", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reconciled, want)
	if again := waitForChild(t, e, "p1-child", child.Metadata.UID); again.Metadata.UID == child.Metadata.UID {
		t.Fatal("child not recreated")
	}

	// An orphan child (no owner) enqueues nothing.
	e.create(t, "orphan", "child")
	e.create(t, "p2", "parent")
	waitFor(t, reconciled, controller.Request{Namespace: "default", Name: "p2"})

	// A scrape sees the reconciles, the queue and the informer.
	metricsServer := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer metricsServer.Close()
	got := scrape(t, metricsServer.URL)
	for _, s := range []string{
		`controller_runtime_reconcile_total{controller="children",result="success"}`,
		`workqueue_adds_total{name="children"}`,
		`workqueue_work_duration_seconds_count{name="children"}`,
	} {
		if got[s] < 4 { // p1 three times, p2 once, at least
			t.Errorf("%s = %v, want at least 4", s, got[s])
		}
	}
	if s := `informer_synced{group="",name="children",resource="configmaps",version="v1"}`; got[s] != 1 {
		t.Errorf("%s = %v, want 1", s, got[s])
	}
}

// scrape returns the series of the metrics at url by name and labels.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("scraped %q: %v", line, err)
		}
		series[name] = f
	}
	return series
}

// waitFor waits for a reconcile of want, failing on any other Request but
// the recreated child's owner, which may be reconciled more than once.
func waitFor(t *testing.T, reconciled <-chan controller.Request, want controller.Request) {
	t.Helper()
	timeout := time.After(deadline)
	for {
		select {
		case got := <-reconciled:
			if got == want {
				return
			}
			if got.Name != "p1" {
				t.Fatalf("reconciled %v while waiting for %v", got, want)
			}
		case <-timeout:
			t.Fatalf("no reconcile of %v within %v", want, deadline)
		}
	}
}

// waitForChild waits until the children's cache holds name with a UID
// other than notUID.
func waitForChild(t *testing.T, e *env, name, notUID string) *configMap {
	t.Helper()
	timeout := time.After(deadline)
	for {
		if cm, ok := e.children.Lister().Namespace("default").Get(name); ok && cm.Metadata.UID != notUID {
			return cm
		}
		select {
		case <-timeout:
			t.Fatalf("no %s (uid other than %q) in the cache within %v", name, notUID, deadline)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
