package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/plugins"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// pluginSource gives the built-in admission plugins the objects they read:
// from their watch caches, else from the store, as kube's plugins read
// their listers and then the API.
type pluginSource struct {
	s       *Server
	decoded *decodedObjects
}

func newPluginSource(s *Server) pluginSource {
	return pluginSource{s: s, decoded: &decodedObjects{byKey: map[string]decodedObject{}}}
}

// maxDecoded bounds the objects decodedObjects keeps: the accounts of
// that many namespaces, and the classes, a few MB at most.
const maxDecoded = 1024

// decodedObjects are the objects of the watch caches the plugins read,
// decoded, by key, each with the cache's object it came from (a new one
// per write, never modified): a pod's create reads its account twice and
// lists the PriorityClasses, which were decoded every time. Beyond
// maxDecoded objects, all are dropped.
type decodedObjects struct {
	mu    sync.Mutex
	byKey map[string]decodedObject // guarded by mu
}

type decodedObject struct {
	from *watchcache.Object
	obj  api.Object
}

// get returns o decoded, shared with the other readers of o.
func (d *decodedObjects) get(o *watchcache.Object) (api.Object, error) {
	d.mu.Lock()
	e, ok := d.byKey[o.Key]
	d.mu.Unlock()
	if ok && e.from == o {
		return e.obj, nil
	}
	obj, err := o.Obj() // unlocked: readers of other objects need not wait
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.byKey) >= maxDecoded {
		clear(d.byKey)
	}
	d.byKey[o.Key] = decodedObject{from: o, obj: obj}
	return obj, nil
}

var _ plugins.Source = pluginSource{}

// pluginsHandle says whether the request's write may meet a built-in
// admission plugin: a write of an object, or of a subresource they act on
// (a pod's binding, a CSR's approval or status).
func (q *request) pluginsHandle() bool {
	return plugins.HandlesWrite(q.res.Group, q.res.Plural, q.info.Subresource)
}

// Get reads an object, shared as List's are. A namespace's default ServiceAccount, which kube's
// plugin waits for (ten tries) while its controller makes it, is made at
// once if the namespace lacks it.
func (ps pluginSource) Get(ctx context.Context, r plugins.Ref, ns, name string) (api.Object, error) {
	res, ok := ps.s.catalog.Get(r.Group, r.Version, r.Plural)
	if !ok {
		return nil, nil
	}
	if c := ps.s.caches.get(res); c != nil {
		if o := c.Get(res.Key(ns, name)); o != nil {
			if obj, err := ps.decoded.get(o); err == nil {
				return obj, nil
			}
		}
	}
	obj, err := ps.s.registry.Get(ctx, res, ns, name)
	if isReason(err, api.StatusReasonNotFound) && r == plugins.ServiceAccounts && name == defaultAccountName {
		// The account is the server's write, not the pod request's (its
		// dry run or its admission).
		ps.s.accounts.ensureCurrent(registry.Detached(ctx), ns)
		obj, err = ps.s.registry.Get(ctx, res, ns, name)
	}
	if isReason(err, api.StatusReasonNotFound) {
		return nil, nil
	}
	return obj, err
}

// List reads the objects of a resource in a namespace (all when "") from
// its cache. The objects are shared between calls, as kube's listers' are:
// the plugins only read them.
func (ps pluginSource) List(ctx context.Context, r plugins.Ref, namespace string) ([]api.Object, error) {
	res, ok := ps.s.catalog.Get(r.Group, r.Version, r.Plural)
	if !ok {
		return nil, nil
	}
	c, err := ps.s.readyCache(ctx, res)
	if c == nil || err != nil {
		return nil, err
	}
	objs, _ := c.List(watchcache.Filter{Namespace: namespace})
	out := make([]api.Object, 0, len(objs))
	for _, o := range objs {
		if obj, err := ps.decoded.get(o); err == nil {
			out = append(out, obj)
		}
	}
	return out, nil
}

// NamespaceLabels reads a namespace's labels from its cache, without
// decoding it, else from the store.
func (ps pluginSource) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	res, _ := ps.s.catalog.Get("", "v1", "namespaces")
	if c := ps.s.caches.get(res); c != nil {
		if o := c.Get(res.Key("", name)); o != nil {
			return o.Labels(), nil
		}
	}
	obj, err := ps.s.registry.Get(ctx, res, "", name)
	if err != nil {
		return nil, err
	}
	return obj.Labels(), nil
}

// systemPriorityClasses are the PriorityClasses kube-apiserver makes at
// start for the system's own pods (pkg/apis/scheduling/v1
// SystemPriorityClasses: 2,000,000,000 and a thousand more).
var systemPriorityClasses = []struct {
	name        string
	value       int64
	description string
}{
	{"system-node-critical", 2000001000, "Used for system critical pods that must not be moved from their current node."},
	{"system-cluster-critical", 2000000000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
}

// ensurePriorityClasses creates the system's PriorityClasses that are
// missing, as kube's scheduling post-start hook.
func (s *Server) ensurePriorityClasses(ctx context.Context) error {
	res, _ := s.catalog.Get(plugins.PriorityClasses.Group, plugins.PriorityClasses.Version, plugins.PriorityClasses.Plural)
	for _, pc := range systemPriorityClasses {
		if _, err := s.registry.GetStored(ctx, res, "", pc.name); err == nil {
			continue
		}
		obj := api.Object{"apiVersion": res.APIVersion(), "kind": res.Kind, "metadata": map[string]any{"name": pc.name},
			"value": pc.value, "description": pc.description}
		if _, err := s.registry.Create(ctx, res, "", obj); err != nil && !isReason(err, api.StatusReasonAlreadyExists) {
			return fmt.Errorf("creating PriorityClass %s: %w", pc.name, err)
		}
	}
	return nil
}
