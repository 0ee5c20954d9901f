package controller_test

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/controller"
)

// configMap is the part of a v1 ConfigMap the examples read and write.
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

// A controller that keeps a child ConfigMap for each parent, with probes
// on :8080 (package controllermetrics adds Prometheus metrics).
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{})
	if err != nil {
		log.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	configMaps := client.NewResource[*configMap](cl, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "")
	parents := cache.NewInformer(configMaps, cache.InformerOptions[*configMap]{Reflector: cache.ReflectorOptions{LabelSelector: "role=parent"}})
	children := cache.NewInformer(configMaps, cache.InformerOptions[*configMap]{Reflector: cache.ReflectorOptions{LabelSelector: "role=child"}})

	c, err := controller.New(controller.Options{Name: "children", MaxConcurrentReconciles: 4},
		func(ctx context.Context, req controller.Request) (controller.Result, error) {
			parent, ok := parents.Lister().Namespace(req.Namespace).Get(req.Name)
			if !ok {
				return controller.Result{}, nil // deleted: the garbage collector removes its child
			}
			child := &configMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: api.ObjectMeta{
				Name: req.Name + "-child", Namespace: req.Namespace, Labels: map[string]string{"role": "child"},
				OwnerReferences: []api.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: parent.Metadata.Name, UID: parent.Metadata.UID, Controller: new(true)}},
			}}
			if _, err := configMaps.Create(ctx, child, client.WriteOptions{}); err != nil && !client.IsAlreadyExists(err) {
				return controller.Result{}, err // retried with backoff
			}
			return controller.Result{RequeueAfter: 10 * time.Minute}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	if err := controller.For(c, parents); err != nil {
		log.Fatal(err)
	}
	if err := controller.Owns(c, children, controller.OwnerType{Kind: "ConfigMap"}, configMapOwners); err != nil {
		log.Fatal(err)
	}

	probes := controller.NewProbes(0)
	for name, inf := range map[string]*cache.SharedIndexInformer[*configMap]{"parents": parents, "children": children} {
		controller.AddInformer(probes, name, inf)
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", probes.Healthz())
	mux.Handle("/readyz", probes.Readyz())
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	var wg sync.WaitGroup
	wg.Go(func() { _ = parents.Run(ctx) })
	wg.Go(func() { _ = children.Run(ctx) })
	wg.Go(func() {
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			log.Print(err)
		}
	})
	if err := c.Start(ctx); err != nil {
		log.Print(err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	stop()
	wg.Wait()
}
