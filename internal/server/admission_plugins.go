package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/admission/plugins"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// pluginSource gives the built-in admission plugins the objects they read:
// from their watch caches, else from the store, as kube's plugins read
// their listers and then the API.
type pluginSource struct {
	s       *Server
	decoded *decodedLists
}

func newPluginSource(s *Server) pluginSource {
	return pluginSource{s: s, decoded: &decodedLists{byRes: map[*resource.Resource]map[*watchcache.Object]api.Object{}}}
}

// decodedLists are the objects List last decoded, per resource, by the
// cache's object they came from (a new one per write): a pod's create
// lists the PriorityClasses, which would otherwise be decoded every time.
type decodedLists struct {
	mu    sync.Mutex
	byRes map[*resource.Resource]map[*watchcache.Object]api.Object // guarded by mu
}

var _ plugins.Source = pluginSource{}

// pluginsHandle says whether the request's write may meet a built-in
// admission plugin.
func (q *request) pluginsHandle() bool {
	return q.info.Subresource == "" && plugins.Handles(q.res.Group, q.res.Plural)
}

// Get reads an object. A namespace's default ServiceAccount, which kube's
// plugin waits for (ten tries) while its controller makes it, is made at
// once if the namespace lacks it.
func (ps pluginSource) Get(ctx context.Context, r plugins.Ref, ns, name string) (api.Object, error) {
	res, ok := ps.s.catalog.Get(r.Group, r.Version, r.Plural)
	if !ok {
		return nil, nil
	}
	if c := ps.s.caches.get(res); c != nil {
		if o := c.Get(res.Key(ns, name)); o != nil {
			if obj, err := o.Obj(); err == nil {
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

// List reads every object of a resource from its cache. The objects are
// shared between calls, as kube's listers' are: the plugins only read them.
func (ps pluginSource) List(ctx context.Context, r plugins.Ref) ([]api.Object, error) {
	res, ok := ps.s.catalog.Get(r.Group, r.Version, r.Plural)
	if !ok {
		return nil, nil
	}
	c, err := ps.s.readyCache(ctx, res)
	if c == nil || err != nil {
		return nil, err
	}
	objs, _ := c.List(watchcache.Filter{})
	d := ps.decoded
	d.mu.Lock()
	defer d.mu.Unlock()
	was, now := d.byRes[res], make(map[*watchcache.Object]api.Object, len(objs))
	out := make([]api.Object, 0, len(objs))
	for _, o := range objs {
		obj, ok := was[o]
		if !ok {
			if obj, err = o.Obj(); err != nil {
				continue
			}
		}
		now[o] = obj
		out = append(out, obj)
	}
	d.byRes[res] = now
	return out, nil
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
