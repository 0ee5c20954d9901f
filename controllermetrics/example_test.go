package controllermetrics_test

import (
	"context"
	"log"
	"net/http"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/controller"
	"github.com/listwatch/listwatch/controllermetrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A controller's, its queue's and its informer's metrics served on
// /metrics.
func Example() {
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{})
	if err != nil {
		log.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	configMaps := client.NewResource[client.Unstructured](cl, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "")
	inf := cache.NewInformer(configMaps, cache.InformerOptions[client.Unstructured]{})

	reg := prometheus.NewRegistry()
	metrics, err := controllermetrics.New(reg)
	if err != nil {
		log.Fatal(err)
	}
	controllermetrics.AddInformer(metrics, "configmaps", configMaps.GVR(), inf)
	c, err := controller.New(controller.Options{Name: "configmaps", Metrics: metrics},
		func(ctx context.Context, req controller.Request) (controller.Result, error) {
			return controller.Result{}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	if err := controller.For(c, inf); err != nil {
		log.Fatal(err)
	}
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Run inf and c, and serve http.DefaultServeMux, as package
	// controller's example does.
}
