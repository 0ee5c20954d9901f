package cuttest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
)

// OurInformer is the Informer of a LagRun made of this module's client
// and cache, with the default options but UseWatchList.
type OurInformer struct {
	Name         string // also its User-Agent
	UseWatchList bool

	mu  sync.Mutex
	inf *cache.SharedIndexInformer[client.Unstructured] // guarded by mu; set by Start
}

// Informer returns the Informer that runs o; its errors go to t's log.
func (o *OurInformer) Informer(t testing.TB) Informer {
	return Informer{Name: o.Name, UserAgent: o.Name, Start: func(ctx context.Context, url string, lags *Lags) (func(), error) {
		cfg := client.ConfigForURL(url)
		cfg.UserAgent = o.Name
		cl, err := client.New(cfg)
		if err != nil {
			return nil, err
		}
		inf := cache.NewInformer(client.NewResource[client.Unstructured](cl, configMaps, LagNamespace), cache.InformerOptions[client.Unstructured]{
			Reflector: cache.ReflectorOptions{Name: o.Name, UseWatchList: o.UseWatchList, WatchErrorHandler: func(err error) { t.Logf("%v", err) }},
		})
		reg, err := inf.AddEventHandler(cache.HandlerFuncs[client.Unstructured]{UpdateFunc: func(_, obj client.Unstructured) {
			data, _ := obj["data"].(map[string]any)
			at, _ := data["at"].(string)
			lags.Note(at)
		}})
		if err != nil {
			cl.Close()
			return nil, err
		}
		o.mu.Lock()
		o.inf = inf
		o.mu.Unlock()
		done := make(chan struct{})
		go func() { defer close(done); _ = inf.Run(ctx) }()
		wait := func() { <-done; cl.Close() }
		syncCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
		defer cancel()
		if !cache.WaitForCacheSync(syncCtx, inf, reg) {
			return wait, errors.New("not synced")
		}
		return wait, nil
	}}
}

// Stats returns the reflector's counters once started.
func (o *OurInformer) Stats() cache.ReflectorStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.inf == nil {
		return cache.ReflectorStats{}
	}
	return o.inf.Reflector().Stats()
}

var configMaps = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
