package rbac

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage/memory"
)

// fixture is a View over a store holding RBAC objects.
type fixture struct {
	t         testing.TB
	store     *memory.Store
	view      *View
	resources map[string]*resource.Resource
}

func newFixture(t testing.TB, objects ...map[string]any) *fixture {
	t.Helper()
	f := &fixture{t: t, store: memory.New(), resources: map[string]*resource.Resource{}}
	t.Cleanup(func() { f.store.Close() })
	builtins := resource.Builtins()
	for _, res := range builtins {
		if res.Group == Group {
			f.resources[res.Kind] = res
		}
	}
	for _, o := range objects {
		f.put(o)
	}
	v, err := Start(context.Background(), f.store, builtins, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	f.view = v
	return f
}

// put stores o (of kind o["kind"]) and returns its resource.
func (f *fixture) put(o map[string]any) *resource.Resource {
	f.t.Helper()
	res := f.resources[o["kind"].(string)]
	md := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	b, err := json.Marshal(o)
	if err != nil {
		f.t.Fatal(err)
	}
	key := res.Key(ns, md["name"].(string))
	if kv, err := f.store.Get(context.Background(), key); err == nil {
		_, err = f.store.Update(context.Background(), key, kv.ModRevision, b)
		if err != nil {
			f.t.Fatal(err)
		}
		return res
	}
	if _, err := f.store.Create(context.Background(), key, b); err != nil {
		f.t.Fatal(err)
	}
	return res
}

func meta(ns, name string) map[string]any {
	m := map[string]any{"name": name}
	if ns != "" {
		m["namespace"] = ns
	}
	return m
}

func grant(verbs, groups, resources []string, names ...string) map[string]any {
	r := map[string]any{"verbs": verbs, "apiGroups": groups, "resources": resources}
	if len(names) > 0 {
		r["resourceNames"] = names
	}
	return r
}

func urlGrant(verbs []string, urls ...string) map[string]any {
	return map[string]any{"verbs": verbs, "nonResourceURLs": urls}
}

func role(ns, name string, rules ...map[string]any) map[string]any {
	kind := "Role"
	if ns == "" {
		kind = "ClusterRole"
	}
	return map[string]any{"apiVersion": Group + "/v1", "kind": kind, "metadata": meta(ns, name), "rules": rules}
}

func subj(kind, name string, ns ...string) map[string]any {
	s := map[string]any{"kind": kind, "name": name}
	if len(ns) > 0 {
		s["namespace"] = ns[0]
	}
	return s
}

// bind binds refKind/refName to subjects, in ns (a RoleBinding) or
// cluster-wide ("": a ClusterRoleBinding).
func bind(ns, name, refKind, refName string, subjects ...map[string]any) map[string]any {
	kind := "RoleBinding"
	if ns == "" {
		kind = "ClusterRoleBinding"
	}
	return map[string]any{
		"apiVersion": Group + "/v1", "kind": kind, "metadata": meta(ns, name),
		"roleRef":  map[string]any{"apiGroup": Group, "kind": refKind, "name": refName},
		"subjects": subjects,
	}
}

func s(v ...string) []string { return v }

func user(name string, groups ...string) *authn.User { return &authn.User{Name: name, Groups: groups} }

func res(u *authn.User, verb, group, resource, ns, name string) authz.Attributes {
	a := authz.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Namespace: ns, Name: name}
	if r, sub, ok := cut(resource); ok {
		a.Resource, a.Subresource = r, sub
	}
	return a
}

func cut(resource string) (string, string, bool) {
	for i := range resource {
		if resource[i] == '/' {
			return resource[:i], resource[i+1:], true
		}
	}
	return resource, "", false
}

func path(u *authn.User, verb, p string) authz.Attributes {
	return authz.Attributes{User: u, Verb: verb, Path: p}
}

func decide(t *testing.T, z authz.Authorizer, a authz.Attributes) (bool, string) {
	t.Helper()
	d, reason, err := z.Authorize(context.Background(), a)
	if err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	if d == authz.Deny {
		t.Fatal("RBAC denied explicitly; it only allows or has no opinion")
	}
	return d == authz.Allow, reason
}
