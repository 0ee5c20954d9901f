package cache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
)

// Factory shares informers among the parts of a program, as client-go's
// SharedInformerFactory does: InformerFor returns one SharedIndexInformer
// per resource, scope and object type, whoever asks for it, so that a
// resource is listed, watched and cached once. Start runs the informers
// not yet started (those asked for after a Start wait for the next one);
// Shutdown waits for them to return once Start's context is done.
type Factory struct {
	client *client.Client
	opts   FactoryOptions

	mu           sync.Mutex
	informers    map[InformerKey]*factoryInformer // guarded by mu
	shuttingDown bool                             // guarded by mu
	wg           sync.WaitGroup                   // Add under mu while !shuttingDown
}

// FactoryOptions configure every informer of a Factory. The zero value is
// usable.
type FactoryOptions struct {
	// Reflector configures listing and watching; its selectors are
	// replaced by each informer's Scope, and an empty Name by the
	// resource's.
	Reflector ReflectorOptions
	// ResyncPeriod and HandlerBufferSize: see InformerOptions.
	ResyncPeriod      time.Duration
	HandlerBufferSize int
}

// Scope is what one informer lists and watches of a resource: a namespace
// ("" for all, or a cluster-scoped resource) and selectors.
type Scope struct {
	Namespace     string
	LabelSelector string
	FieldSelector string
}

// InformerKey names one informer of a Factory.
type InformerKey struct {
	GVR client.GroupVersionResource
	Scope
	// Type is the informer's object type T.
	Type reflect.Type
}

// factoryInformer is an informer of any T, as the Factory runs it.
type factoryInformer struct {
	informer any // *SharedIndexInformer[T]
	run      func(context.Context) error
	check    func(client.APIResources) error
	synced   SyncSignal
	started  bool // guarded by the Factory's mu
}

// NewFactory returns a Factory of informers reading through c.
func NewFactory(c *client.Client, opts FactoryOptions) *Factory {
	return &Factory{client: c, opts: opts, informers: map[InformerKey]*factoryInformer{}}
}

// InformerFor returns f's informer of gvr in scope, decoding objects into
// T, making it on the first call. T = *api.PartialObjectMetadata makes a
// metadata-only informer (see client.NewResource). Add handlers, and
// indexers through FactoryOptions, before or after f.Start; the informer
// runs from the next Start.
func InformerFor[T client.Object](f *Factory, gvr client.GroupVersionResource, scope Scope) *SharedIndexInformer[T] {
	key := InformerKey{GVR: gvr, Scope: scope, Type: reflect.TypeFor[T]()}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fi, ok := f.informers[key]; ok {
		return fi.informer.(*SharedIndexInformer[T])
	}
	ro := f.opts.Reflector
	ro.LabelSelector, ro.FieldSelector = scope.LabelSelector, scope.FieldSelector
	if ro.Name == "" {
		ro.Name = gvr.String()
	}
	res := client.NewResource[T](f.client, gvr, scope.Namespace)
	inf := NewInformer(res, InformerOptions[T]{
		Reflector: ro, ResyncPeriod: f.opts.ResyncPeriod, HandlerBufferSize: f.opts.HandlerBufferSize,
	})
	f.informers[key] = &factoryInformer{informer: inf, run: inf.Run, check: res.Check, synced: inf}
	return inf
}

// Check compares every informer's resource, scope and type with the
// server's discovery (read once), as client.Resource.Check does, so that a
// mistake fails before Start rather than as an informer that never syncs
// or objects decoded to zero values.
func (f *Factory) Check(ctx context.Context) error {
	rs, err := f.client.Discover(ctx)
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, fi := range f.informers {
		errs = append(errs, fi.check(rs))
	}
	return errors.Join(errs...)
}

// Start runs, until ctx is done, every informer of f not yet started. It
// does nothing after Shutdown.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shuttingDown {
		return
	}
	for _, fi := range f.informers {
		if !fi.started {
			fi.started = true
			// Run fails only with ErrStarted: the caller ran the informer
			// itself, and it runs.
			f.wg.Go(func() { _ = fi.run(ctx) })
		}
	}
}

// WaitForCacheSync waits until every informer Start started has synced,
// or ctx is done, and reports which have.
func (f *Factory) WaitForCacheSync(ctx context.Context) map[InformerKey]bool {
	f.mu.Lock()
	started := map[InformerKey]SyncSignal{}
	for key, fi := range f.informers {
		if fi.started {
			started[key] = fi.synced
		}
	}
	f.mu.Unlock()
	synced := make(map[InformerKey]bool, len(started))
	for key, sig := range started {
		synced[key] = WaitForCacheSync(ctx, sig)
	}
	return synced
}

// Shutdown makes later Starts do nothing and waits for the informers
// started to return (when the contexts given to Start are done).
func (f *Factory) Shutdown() {
	f.mu.Lock()
	f.shuttingDown = true
	f.mu.Unlock()
	f.wg.Wait()
}
