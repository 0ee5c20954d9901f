package server

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/follow"
	"github.com/listwatch/listwatch/internal/server/admission/plugins"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// defaultAccountName is the service account every namespace has.
const defaultAccountName = "default"

// ensureConcurrency bounds the namespaces whose accounts are ensured at
// once at start.
const ensureConcurrency = 16

// defaultAccounts keeps in every namespace that is not being deleted the
// objects kube-controller-manager makes there: a `default` ServiceAccount
// (its serviceaccounts controller) and, if the server has a CA, the
// kube-root-ca.crt ConfigMap of it (its root-ca-cert-publisher); for
// every namespace at start, for each new one, and again when one is
// deleted or (the ConfigMap) changed. It follows the store itself (one follow.Follower of
// namespaces, one of each kind of object), so the objects of a namespace
// another server on the same store created are made too (creates are
// idempotent: every server may try). Only the elected server puts back
// an object changed (lead), as kube's publisher runs in the one leading
// controller manager: servers with different CAs would otherwise rewrite
// kube-root-ca.crt in turn for ever.
type defaultAccounts struct {
	registry   *registry.Registry
	store      storage.Interface
	namespaces *resource.Resource
	objects    []namespaceObject
	log        *slog.Logger

	ctx       context.Context // of the creates; ended by close
	cancel    context.CancelFunc
	followers []*follow.Follower

	leading atomic.Bool // whether this server fixes changed objects (lead)

	mu sync.Mutex
	// starting holds, while start lists them, the namespaces to ensure
	// concurrently (on a fresh store their creates then share group
	// commits, as ensureNamespaces'); nil once started. Guarded by mu.
	starting [][]byte
}

// namespaceObject is an object every active namespace has.
type namespaceObject struct {
	res  *resource.Resource
	name string
	// make returns the object to create when it is missing.
	make func() api.Object
	// fix, if set, changes a stored object to what it must be and says
	// whether it did; an object it would not change stays as it is.
	fix func(stored api.Object) bool
}

// startDefaultAccounts ensures the objects of every namespace, so that a
// server serves them from its first request, then follows the store; close
// stops it. rootCA is the CA bundle kube-root-ca.crt publishes.
func startDefaultAccounts(ctx context.Context, reg *registry.Registry, store storage.Interface, catalog *resource.Catalog, rootCA []byte, log *slog.Logger) (*defaultAccounts, error) {
	d := &defaultAccounts{registry: reg, store: store, log: log}
	d.namespaces, _ = catalog.Get("", "v1", "namespaces")
	accounts, _ := catalog.Get("", "v1", "serviceaccounts")
	configMaps, _ := catalog.Get("", "v1", "configmaps")
	d.objects = []namespaceObject{
		{res: accounts, name: defaultAccountName, make: func() api.Object {
			return api.Object{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": defaultAccountName}}
		}},
	}
	if rootCA != nil {
		d.objects = append(d.objects, rootCAConfigMap(configMaps, string(rootCA)))
	}
	d.ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	d.starting = [][]byte{}
	type followed struct {
		res   *resource.Resource
		what  string
		apply follow.Apply
	}
	follows := []followed{{d.namespaces, "namespaces for their default objects", d.namespaceChanged}}
	for _, o := range d.objects {
		follows = append(follows, followed{o.res, "the " + o.name + " " + o.res.Plural + " of namespaces", d.objectChanged(o)})
	}
	for _, f := range follows {
		follower, err := follow.Start(ctx, store, f.res.KeyPrefix(""), f.what, f.apply, log)
		if err != nil {
			d.close()
			return nil, err
		}
		d.followers = append(d.followers, follower)
	}
	d.mu.Lock()
	listed := d.starting
	d.starting = nil
	d.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, ensureConcurrency)
	for _, ns := range listed {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d.ensureIfActive(ctx, ns)
		})
	}
	wg.Wait()
	return d, nil
}

// The root-ca-cert-publisher's ConfigMap.
const (
	rootCADescriptionAnnotation = "kubernetes.io/description"
	rootCADescription           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// rootCAConfigMap is kube-root-ca.crt with ca as its ca.crt: its data and
// description are put back when changed, as kube's publisher does.
func rootCAConfigMap(configMaps *resource.Resource, ca string) namespaceObject {
	return namespaceObject{res: configMaps, name: plugins.RootCAConfigMap,
		make: func() api.Object {
			return api.Object{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"ca.crt": ca},
				"metadata": map[string]any{"name": plugins.RootCAConfigMap, "annotations": map[string]any{rootCADescriptionAnnotation: rootCADescription}}}
		},
		fix: func(stored api.Object) bool {
			data, _ := stored["data"].(map[string]any)
			if len(data) == 1 && data["ca.crt"] == ca && stored.Annotations()[rootCADescriptionAnnotation] != "" {
				return false
			}
			stored["data"] = map[string]any{"ca.crt": ca}
			annotations, _ := stored.EnsureMetadata()["annotations"].(map[string]any)
			if annotations == nil {
				annotations = map[string]any{}
				stored.EnsureMetadata()["annotations"] = annotations
			}
			annotations[rootCADescriptionAnnotation] = rootCADescription
			return true
		},
	}
}

// lead makes this server put back the objects changed, in every
// namespace now and then as they change, until ctx ends: it runs while
// the server leads the election.
func (d *defaultAccounts) lead(ctx context.Context) {
	d.leading.Store(true)
	defer d.leading.Store(false)
	opts := storage.ListOptions{Limit: leadPage}
	fixes := slices.ContainsFunc(d.objects, func(o namespaceObject) bool { return o.fix != nil })
	for fixes && ctx.Err() == nil {
		page, err := d.store.List(ctx, d.namespaces.KeyPrefix(""), opts)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("listing namespaces for their default objects", "err", err)
			}
			break
		}
		for _, kv := range page.KVs {
			d.ensureIfActive(ctx, kv.Value)
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	<-ctx.Done()
}

// leadPage bounds each page of namespaces lead lists.
const leadPage = 500

// close stops the followers and waits for them.
func (d *defaultAccounts) close() {
	d.cancel()
	for _, f := range d.followers {
		f.Close()
	}
}

// namespaceChanged ensures the objects of a namespace listed, created or
// changed.
func (d *defaultAccounts) namespaceChanged(_ string, _ int64, value []byte) {
	if value == nil {
		return
	}
	d.mu.Lock()
	if d.starting != nil {
		d.starting = append(d.starting, value)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.ensureIfActive(d.ctx, value)
}

// objectChanged ensures the objects of the namespace of an o deleted, or
// changed when o has a form to keep.
func (d *defaultAccounts) objectChanged(o namespaceObject) follow.Apply {
	return func(key string, _ int64, value []byte) {
		ns := o.res.NamespaceOfKey(key)
		if key == o.res.Key(ns, o.name) && (value == nil || o.fix != nil) {
			d.ensureCurrent(d.ctx, ns)
		}
	}
}

// ensureCurrent ensures the objects of namespace ns as it is stored now:
// objects deleted with their namespace are not made again.
func (d *defaultAccounts) ensureCurrent(ctx context.Context, ns string) {
	kv, err := d.store.Get(ctx, d.namespaces.Key("", ns))
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			d.log.Warn("reading a namespace for its default objects", "namespace", ns, "err", err)
		}
		return
	}
	d.ensureIfActive(ctx, kv.Value)
}

// ensureIfActive makes or fixes the objects of the namespace value holds,
// unless the namespace is being deleted.
func (d *defaultAccounts) ensureIfActive(ctx context.Context, value []byte) {
	ns, err := api.ParseObject(value)
	if err != nil || ns.Metadata()["deletionTimestamp"] != nil {
		return
	}
	for _, o := range d.objects {
		// A namespace marked since it was read refuses new content: kube's
		// serviceaccounts controller skips that error too.
		err := d.ensure(ctx, ns.Name(), o)
		if err != nil && !isReason(err, api.StatusReasonAlreadyExists) && !isReason(err, api.StatusReasonNotFound) && !isReason(err, api.StatusReasonConflict) &&
			!registry.IsNamespaceTerminating(err) && ctx.Err() == nil {
			d.log.Warn("making a namespace's default object", "namespace", ns.Name(), "resource", o.res.Plural, "name", o.name, "err", err)
		}
	}
}

// ensure makes o in namespace ns if it is missing, or fixes it.
func (d *defaultAccounts) ensure(ctx context.Context, ns string, o namespaceObject) error {
	kv, err := d.registry.GetStored(ctx, o.res, ns, o.name)
	if err != nil {
		_, err = d.registry.Create(ctx, o.res, ns, o.make())
		return err
	}
	if stored, err := api.ParseObject(kv.Value); o.fix == nil || !d.leading.Load() || err != nil || !o.fix(stored) {
		return nil
	}
	_, err = d.registry.Update(ctx, o.res, ns, o.name, func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		o.fix(next)
		delete(next.Metadata(), "resourceVersion") // a write meanwhile is retried, not refused
		return next, nil
	})
	return err
}
