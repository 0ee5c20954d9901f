// Command configmap-mirror is an example controller built on the cache and
// workqueue packages. It copies every ConfigMap labelled
// mirror.listwatch.io/to=<namespace> into that namespace, under the same
// name, keeps the copy's data equal to the source's, and deletes the copy
// when the source goes. The copy is labelled
// mirror.listwatch.io/from=<namespace>/<name>, so that a change to it (or
// its deletion) brings the source back into the queue and the drift is
// undone.
//
// One informer watches ConfigMaps in all namespaces; its handler turns each
// notification into the key of a source ConfigMap and adds it to a rate-
// limited workqueue; workers reconcile keys from the informer's cache, so
// reads never hit the server, and retry failures with backoff.
//
//	configmap-mirror --server http://127.0.0.1:8080 --workers 2
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/cache"
	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/workqueue"
)

// The label and annotation that drive the controller, and the index of
// copies by source.
const (
	toLabel        = "mirror.listwatch.io/to"
	fromAnnotation = "mirror.listwatch.io/from"
	mirrorOfIndex  = "mirrorOf"
)

// ConfigMap is the part of a v1 ConfigMap the controller reads and writes.
type ConfigMap struct {
	APIVersion string            `json:"apiVersion,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Metadata   api.ObjectMeta    `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
}

// GetName, GetNamespace, GetResourceVersion and GetLabels make *ConfigMap a
// client.Object.
func (c *ConfigMap) GetName() string                   { return c.Metadata.Name }
func (c *ConfigMap) GetNamespace() string              { return c.Metadata.Namespace }
func (c *ConfigMap) GetResourceVersion() string        { return c.Metadata.ResourceVersion }
func (c *ConfigMap) GetLabels() map[string]string      { return c.Metadata.Labels }
func (c *ConfigMap) GetAnnotations() map[string]string { return c.Metadata.Annotations }

func main() {
	server := flag.String("server", client.DefaultServer, "the API server's URL")
	workers := flag.Int("workers", 2, "reconciling workers")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &client.Config{Host: *server}, *workers); err != nil {
		slog.Error("configmap-mirror", "err", err)
		os.Exit(1)
	}
}

// controller reconciles mirrors from an informer's cache.
type controller struct {
	configMaps *client.Resource[*ConfigMap]
	indexer    *cache.Indexer[*ConfigMap]
	lister     cache.Lister[*ConfigMap]
	queue      *workqueue.Queue[string]
}

func run(ctx context.Context, cfg *client.Config, workers int) error {
	c, err := client.New(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer c.Close()
	configMaps := client.NewResource[*ConfigMap](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "")
	inf := cache.NewInformer(configMaps, cache.InformerOptions[*ConfigMap]{
		Reflector: cache.ReflectorOptions{Name: "configmaps", UseWatchList: true},
		Indexers:  cache.Indexers[*ConfigMap]{mirrorOfIndex: mirrorOf},
	})
	if err := inf.SetTransform(dropManagedFields); err != nil {
		return err
	}
	ctl := &controller{
		configMaps: configMaps,
		indexer:    inf.Indexer(),
		lister:     inf.Lister(),
		queue:      workqueue.New(workqueue.Options[string]{}),
	}
	reg, err := inf.AddEventHandler(cache.HandlerFuncs[*ConfigMap]{
		AddFunc:    func(cm *ConfigMap, _ bool) { ctl.enqueue(cm) },
		UpdateFunc: func(_, cm *ConfigMap) { ctl.enqueue(cm) },
		DeleteFunc: func(cm *ConfigMap, _ bool) { ctl.enqueue(cm) },
	})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	defer wg.Wait()
	if !cache.WaitForCacheSync(ctx, inf, reg) {
		return ctx.Err()
	}
	slog.Info("cache synced", "configmaps", inf.Indexer().Len())
	for range workers {
		wg.Go(ctl.work)
	}
	<-ctx.Done()
	ctl.queue.ShutDownWithDrain()
	return nil
}

// dropManagedFields keeps managedFields out of the cache: the controller
// never reads them.
func dropManagedFields(cm *ConfigMap) *ConfigMap {
	cm.Metadata.ManagedFields = nil
	return cm
}

// mirrorOf indexes a copy by the key of its source.
func mirrorOf(cm *ConfigMap) []string {
	if from := cm.Metadata.Annotations[fromAnnotation]; from != "" {
		return []string{from}
	}
	return nil
}

// enqueue adds the key of the source cm is, or is a copy of.
func (ctl *controller) enqueue(cm *ConfigMap) {
	if from := cm.Metadata.Annotations[fromAnnotation]; from != "" {
		ctl.queue.Add(from)
		return
	}
	if cm.Metadata.Labels[toLabel] != "" {
		ctl.queue.Add(cache.MetaNamespaceKeyFunc(cm))
	}
}

// work reconciles keys until the queue shuts down; failures are retried
// with the queue's rate limiter.
func (ctl *controller) work() {
	for {
		key, shutdown := ctl.queue.Get()
		if shutdown {
			return
		}
		if err := ctl.reconcile(context.Background(), key); err != nil {
			slog.Warn("reconcile failed; will retry", "key", key, "requeues", ctl.queue.NumRequeues(key), "err", err)
			ctl.queue.AddRateLimited(key)
		} else {
			ctl.queue.Forget(key)
		}
		ctl.queue.Done(key)
	}
}
