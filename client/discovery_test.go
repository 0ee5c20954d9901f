package client

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const aggregatedCore = `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
 {"metadata":{"name":""},"versions":[{"version":"v1","resources":[
  {"resource":"configmaps","responseKind":{"group":"","version":"v1","kind":"ConfigMap"},"scope":"Namespaced","singularResource":"configmap","verbs":["get","list"],"shortNames":["cm"]},
  {"resource":"events","responseKind":{"group":"","version":"v1","kind":"Event"},"scope":"Namespaced","singularResource":"event","verbs":["get"],"shortNames":["ev"]},
  {"resource":"namespaces","responseKind":{"group":"","version":"v1","kind":"Namespace"},"scope":"Cluster","singularResource":"namespace","verbs":["get"],"shortNames":["ns"],
   "subresources":[{"subresource":"status","verbs":["get"]}]}]}]}]}`

const aggregatedGroups = `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
 {"metadata":{"name":"apps"},"versions":[{"version":"v1","resources":[
  {"resource":"deployments","responseKind":{"group":"apps","version":"v1","kind":"Deployment"},"scope":"Namespaced","singularResource":"deployment","verbs":["get"],"shortNames":["deploy"],"categories":["all"]}]}]},
 {"metadata":{"name":"events.k8s.io"},"versions":[{"version":"v1","resources":[
  {"resource":"events","responseKind":{"group":"events.k8s.io","version":"v1","kind":"Event"},"scope":"Namespaced","singularResource":"event","verbs":["get"],"shortNames":["ev"]}]}]},
 {"metadata":{"name":"stable.example.com"},"versions":[
  {"version":"v2","resources":[{"resource":"crontabs","responseKind":{"group":"stable.example.com","version":"v2","kind":"CronTab"},"scope":"Namespaced","singularResource":"crontab","verbs":["get"],"shortNames":["ct"]}]},
  {"version":"v1","resources":[{"resource":"crontabs","responseKind":{"group":"stable.example.com","version":"v1","kind":"CronTab"},"scope":"Namespaced","singularResource":"crontab","verbs":["get"],"shortNames":["ct"]}]}]}]}`

const aggregatedType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func aggregatedServer(_ int, c call) reply {
	body := aggregatedGroups
	if c.Path == "/api" {
		body = aggregatedCore
	}
	return reply{header: map[string]string{"Content-Type": aggregatedType}, body: body}
}

// legacyServer answers as a server without aggregated discovery.
func legacyServer(_ int, c call) reply {
	switch c.Path {
	case "/api":
		return reply{body: `{"kind":"APIVersions","versions":["v1"]}`}
	case "/apis":
		return reply{body: `{"kind":"APIGroupList","groups":[
 {"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
 {"name":"stable.example.com","versions":[{"groupVersion":"stable.example.com/v1","version":"v1"},{"groupVersion":"stable.example.com/v2","version":"v2"}],
  "preferredVersion":{"groupVersion":"stable.example.com/v2","version":"v2"}}]}`}
	case "/api/v1":
		return reply{body: `{"kind":"APIResourceList","groupVersion":"v1","resources":[
 {"name":"configmaps","singularName":"","namespaced":true,"kind":"ConfigMap","verbs":["get","list"],"shortNames":["cm"]},
 {"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get"],"shortNames":["ns"]},
 {"name":"namespaces/status","singularName":"","namespaced":false,"kind":"Namespace","verbs":["get"]}]}`}
	case "/apis/apps/v1":
		return reply{body: `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
 {"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get"],"shortNames":["deploy"],"categories":["all"]}]}`}
	case "/apis/stable.example.com/v1", "/apis/stable.example.com/v2":
		gv := strings.TrimPrefix(c.Path, "/apis/")
		return reply{body: `{"kind":"APIResourceList","groupVersion":"` + gv + `","resources":[
 {"name":"crontabs","singularName":"crontab","namespaced":true,"kind":"CronTab","verbs":["get"],"shortNames":["ct"]}]}`}
	}
	return reply{code: 404}
}

func gvrs(rs APIResources) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.GroupVersionResource.String())
	}
	return out
}

func TestDiscoverAggregated(t *testing.T) {
	f, c := newFakeServer(t, aggregatedServer)
	rs, err := c.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"configmaps.v1", "events.v1", "namespaces.v1", "deployments.v1.apps", "events.v1.events.k8s.io",
		"crontabs.v2.stable.example.com", "crontabs.v1.stable.example.com"}
	if diff := cmp.Diff(want, gvrs(rs)); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if got := f.seen(); len(got) != 2 || got[0].Accept != mediaAggregatedDiscovery {
		t.Errorf("requests: %+v", got)
	}
	dep := rs[3]
	if dep.Kind != "Deployment" || !dep.Namespaced || dep.Categories[0] != "all" || rs[2].Namespaced {
		t.Errorf("deployments: %+v; namespaces: %+v", dep, rs[2])
	}
}

func TestDiscoverLegacy(t *testing.T) {
	f, c := newFakeServer(t, legacyServer)
	rs, err := c.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"configmaps.v1", "namespaces.v1", "deployments.v1.apps",
		"crontabs.v2.stable.example.com", "crontabs.v1.stable.example.com"}
	if diff := cmp.Diff(want, gvrs(rs)); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if n := len(f.seen()); n != 6 {
		t.Errorf("%d requests, want 6", n)
	}
	if r, _ := rs.Resolve("configmap"); r.Resource != "configmaps" {
		t.Errorf("a singular name from the kind: %+v", r)
	}
}

func TestResolve(t *testing.T) {
	_, c := newFakeServer(t, aggregatedServer)
	rs, err := c.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"configmaps":                        "configmaps.v1",
		"configmap":                         "configmaps.v1",
		"cm":                                "configmaps.v1",
		"ConfigMap":                         "configmaps.v1",
		"CONFIGMAPS":                        "configmaps.v1",
		"deploy":                            "deployments.v1.apps",
		"deployments.apps":                  "deployments.v1.apps",
		"deployment.v1.apps":                "deployments.v1.apps",
		"Deployment.apps":                   "deployments.v1.apps",
		"events":                            "events.v1",
		"ev":                                "events.v1",
		"events.events.k8s.io":              "events.v1.events.k8s.io",
		"crontabs":                          "crontabs.v2.stable.example.com",
		"ct.stable.example.com":             "crontabs.v2.stable.example.com",
		"crontabs.v1.stable.example.com":    "crontabs.v1.stable.example.com",
		"crontab.stable.example.com":        "crontabs.v2.stable.example.com",
		"ns":                                "namespaces.v1",
		"namespaces.v1.":                    "namespaces.v1", // kubectl: the core group, fully specified
		"status":                            "",
		"deployments.extensions":            "",
		"nothing":                           "",
		"crontabs.v3.stable.example.com":    "",
		"configmaps.v1.stable.example.com.": "",
	}
	for arg, want := range tests {
		got, err := rs.Resolve(arg)
		if want == "" {
			if err == nil || !strings.Contains(err.Error(), "doesn't have a resource type") {
				t.Errorf("Resolve(%q) = %v, %v; want an error", arg, got.GroupVersionResource, err)
			}
			continue
		}
		if err != nil || got.GroupVersionResource.String() != want {
			t.Errorf("Resolve(%q) = %v, %v; want %s", arg, got.GroupVersionResource, err, want)
		}
	}
	for _, tt := range []struct{ apiVersion, kind, want string }{
		{"v1", "ConfigMap", "configmaps.v1"},
		{"stable.example.com/v1", "CronTab", "crontabs.v1.stable.example.com"},
		{"apps/v1", "Deployment", "deployments.v1.apps"},
		{"apps/v2", "Deployment", ""},
		{"v1", "Nope", ""},
	} {
		got, err := rs.ForKind(tt.apiVersion, tt.kind)
		if tt.want == "" && err == nil || tt.want != "" && (err != nil || got.GroupVersionResource.String() != tt.want) {
			t.Errorf("ForKind(%s, %s) = %v, %v; want %q", tt.apiVersion, tt.kind, got.GroupVersionResource, err, tt.want)
		}
	}
}
