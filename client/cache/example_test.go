package cache_test

import (
	"context"
	"log"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache"
)

// A program's own type: api.ObjectMeta as its metadata makes *Widget a
// client.Object, with no methods to write.
type Widget struct {
	api.TypeMeta
	api.ObjectMeta `json:"metadata"`
	Spec           struct {
		Size int `json:"size"`
	} `json:"spec"`
}

// Several parts of a controller share one informer per resource through a
// Factory: one reads Widgets, another only the metadata of Secrets, and a
// handler sees only the Widgets labelled for it, each call given a context
// that ends with the informer.
func ExampleInformerFor() {
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{})
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	f := cache.NewFactory(c, cache.FactoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		f.Shutdown() // waits for the informers, which stop with ctx
	}()

	widgets := cache.InformerFor[*Widget](f, client.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, cache.Scope{})
	secrets := cache.InformerFor[*api.PartialObjectMetadata](f, client.GroupVersionResource{Version: "v1", Resource: "secrets"}, cache.Scope{Namespace: "default"})
	if err := f.Check(ctx); err != nil {
		log.Fatal(err) // a resource not served, or of another kind than its type
	}
	_, err = widgets.AddEventHandler(cache.FilteringHandler[*Widget]{
		Filter: func(w *Widget) bool { return w.Labels["team"] == "blue" },
		Handler: cache.ContextHandlerFuncs[*Widget]{
			AddFunc: func(ctx context.Context, w *Widget, isInInitialList bool) {
				log.Printf("widget %s/%s joined (initial list: %t)", w.Namespace, w.Name, isInInitialList)
			},
			DeleteFunc: func(ctx context.Context, w *Widget, finalStateUnknown bool) {
				log.Printf("widget %s/%s left", w.Namespace, w.Name)
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	f.Start(ctx)
	for key, ok := range f.WaitForCacheSync(ctx) {
		if !ok {
			log.Fatalf("%v did not sync", key)
		}
	}
	log.Printf("%d secrets in default", len(secrets.Indexer().List()))
}
