package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/admission/policies"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/crd"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// policySource gives the policy validator and mutator the admission
// policies and their bindings from their watch caches, compiled once per
// policy generation and regrouped only when one changed; namespaces,
// equivalent resources and the freshness of what was written through this
// server are the webhooks' source's.
type policySource struct {
	*webhookSource

	mu sync.Mutex
	// guarded by mu: by kind ([0] validating, [1] mutating), the policies
	// with their bindings.
	sets [2]policySet
}

// policySet is the policies of one kind: the key@revision of every policy
// and binding they were built from, and each policy compiled, by
// name/uid/generation.
type policySet struct {
	versions []string
	policies []*policies.Policy
	compiled map[string]*policies.Policy
}

// policyKinds are the plurals of each kind of policy and of its bindings.
var policyKinds = [2][2]string{
	{"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
	{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
}

var _ policies.Source = (*policySource)(nil)

// checkPolicyExpressions makes the admission policies' validation compile
// their expressions too, as kube's does.
func checkPolicyExpressions(builtins []*resource.Resource) {
	for _, r := range builtins {
		if r.Group == resource.AdmissionGroup && (r.Kind == "ValidatingAdmissionPolicy" || r.Kind == "MutatingAdmissionPolicy") {
			validate := r.Validate
			r.Validate = func(obj api.Object) []api.StatusCause { return append(validate(obj), policies.Causes(obj)...) }
		}
	}
}

// readyCache is res's cache once it has loaded; nil while the server
// closes.
func (s *Server) readyCache(ctx context.Context, res *resource.Resource) (*watchcache.Cache, error) {
	c := s.caches.get(res)
	if c == nil {
		return nil, nil
	}
	if err := c.WaitReady(ctx); err != nil {
		return nil, apierror.Internal(err)
	}
	return c, nil
}

// listFresh lists the objects of an admission kind from its cache, once it
// holds what was written through this server.
func (ws *webhookSource) listFresh(ctx context.Context, plural string) ([]*watchcache.Object, error) {
	res, ok := ws.s.catalog.Get(resource.AdmissionGroup, "v1", plural)
	if !ok {
		return nil, nil
	}
	c, err := ws.s.readyCache(ctx, res)
	if c == nil || err != nil {
		return nil, err
	}
	if err := ws.s.waitFresh(ctx, c, ws.written[plural].Load()); err != nil {
		return nil, err
	}
	objs, _ := c.List(watchcache.Filter{})
	return objs, nil
}

// Policies returns the policies of one kind by name, each with its
// bindings by name.
func (ps *policySource) Policies(ctx context.Context, mutating bool) ([]*policies.Policy, error) {
	kind := 0
	if mutating {
		kind = 1
	}
	pols, err := ps.listFresh(ctx, policyKinds[kind][0])
	if err != nil {
		return nil, err
	}
	binds, err := ps.listFresh(ctx, policyKinds[kind][1])
	if err != nil {
		return nil, err
	}
	versions := make([]string, 0, len(pols)+len(binds))
	for _, o := range slices.Concat(pols, binds) {
		versions = append(versions, o.Key+"@"+formatRV(o.Rev))
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	set := &ps.sets[kind]
	if slices.Equal(set.versions, versions) {
		return set.policies, nil
	}
	bindings := map[string][]*policies.Binding{}
	for _, o := range binds {
		if obj, err := o.Obj(); err == nil {
			b := policies.ReadBinding(obj)
			bindings[b.PolicyName] = append(bindings[b.PolicyName], b)
		}
	}
	compiled := make(map[string]*policies.Policy, len(pols))
	var out []*policies.Policy
	for _, o := range pols {
		obj, err := o.Obj()
		if err != nil {
			continue // the cache logs what it cannot decode
		}
		key := fmt.Sprint(obj.Name(), "/", obj.UID(), "/", obj.Metadata()["generation"])
		p := set.compiled[key]
		if p == nil {
			p = policies.Compile(obj)
		}
		compiled[key] = p
		if bs := bindings[p.Name]; len(bs) > 0 {
			withBindings := *p
			withBindings.Bindings = bs
			out = append(out, &withBindings)
		}
	}
	*set = policySet{versions: versions, policies: out, compiled: compiled}
	return out, nil
}

// Namespace returns a namespace from its cache, else from the store.
func (ps *policySource) Namespace(ctx context.Context, name string) (api.Object, error) {
	return ps.namespace(ctx, name)
}

// paramResource is the resource serving a paramKind.
func (ps *policySource) paramResource(apiVersion, kind string) *resource.Resource {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	for _, r := range ps.s.catalog.All() {
		if r.Group == group && r.Version == version && r.Kind == kind && !r.CreateOnly {
			return r
		}
	}
	return nil
}

func (ps *policySource) ParamScope(apiVersion, kind string) (namespaced, served bool) {
	r := ps.paramResource(apiVersion, kind)
	return r != nil && r.Namespaced, r != nil
}

// Params reads params from their kind's cache; one asked for by name and
// not there yet is read from the store, as kube falls back to a live GET
// for a param created a moment ago.
func (ps *policySource) Params(ctx context.Context, apiVersion, kind, namespace, name string, sel selector.Labels) ([]api.Object, error) {
	res := ps.paramResource(apiVersion, kind)
	if res == nil {
		return nil, nil
	}
	c, err := ps.s.readyCache(ctx, res)
	if c == nil || err != nil {
		return nil, err
	}
	if name == "" {
		objs, _ := c.List(watchcache.Filter{Namespace: namespace, Labels: sel})
		out := make([]api.Object, 0, len(objs))
		for _, o := range objs {
			if obj, err := o.Obj(); err == nil {
				out = append(out, obj)
			}
		}
		return out, nil
	}
	if o := c.Get(res.Key(namespace, name)); o != nil {
		obj, err := o.Obj()
		if err != nil {
			return nil, err
		}
		return []api.Object{obj}, nil
	}
	obj, err := ps.s.registry.Get(ctx, res, namespace, name)
	var se *api.StatusError
	if errors.As(err, &se) && se.Status.Reason == api.StatusReasonNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []api.Object{obj}, nil
}

// policyStatusRetry is how long the policy status controller waits before
// it follows the policies again after its watch ended.
const policyStatusRetry = time.Second

// policyStatus is kube's ValidatingAdmissionPolicy status controller: it
// runs while this server leads and, for each policy whose generation is
// past its status.observedGeneration, writes the generation and the type
// checking's warnings there (policies.TypeCheck).
func (s *Server) policyStatus(ctx context.Context) {
	res, _ := s.catalog.Get(resource.AdmissionGroup, "v1", "validatingadmissionpolicies")
	s.followCache(ctx, res, "policy status", policyStatusRetry, func(it watchcache.Item) {
		var p policyGenerations
		if it.Type == api.Deleted || json.Unmarshal(it.Object, &p) != nil || p.Metadata.Generation <= p.Status.ObservedGeneration {
			return
		}
		_, err := s.registry.Update(ctx, partView(res), "", p.Metadata.Name, func(cur api.Object) (api.Object, error) {
			next := cur.DeepCopy()
			status, _ := next["status"].(map[string]any)
			if status == nil {
				status = map[string]any{}
			}
			status["observedGeneration"] = next.Metadata()["generation"]
			status["typeChecking"] = s.typeChecking(next)
			next["status"] = status
			return next, nil
		})
		if err != nil && !isReason(err, api.StatusReasonNotFound) {
			s.log.Warn("policy status: writing a policy's status", "name", p.Metadata.Name, "err", err)
		}
	})
}

// typeChecking is a policy's status.typeChecking, its expressions checked
// against the schemas of the kinds it names.
func (s *Server) typeChecking(policy api.Object) map[string]any {
	warnings := policies.TypeCheck(policy, func(group, version, plural string) (string, *crd.Schema, bool) {
		res, ok := s.catalog.Get(group, version, plural)
		if !ok {
			return "", nil, false
		}
		schema, err := crd.TypeSchema(res)
		if err != nil {
			s.log.Warn("policy status: no schema to type-check against", "kind", res.Kind, "err", err)
		}
		return res.Kind, schema, true
	})
	if len(warnings) == 0 {
		return map[string]any{}
	}
	list := make([]any, len(warnings))
	for i, w := range warnings {
		list[i] = map[string]any{"fieldRef": w.FieldRef, "warning": w.Warning}
	}
	return map[string]any{"expressionWarnings": list}
}

// policyGenerations is what the status controller reads of a policy.
type policyGenerations struct {
	Metadata struct {
		Name       string `json:"name"`
		Generation int64  `json:"generation"`
	} `json:"metadata"`
	Status struct {
		ObservedGeneration int64 `json:"observedGeneration"`
	} `json:"status"`
}
