package server

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBuiltinFieldSelectors checks kube's field selectors of built-in
// kinds, from storage and from the watch cache: a field absent from the
// object reads as kube prints its zero value ("false", "0"), and each kind
// refuses other labels with kube's own message for it.
func TestBuiltinFieldSelectors(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	const podsPath = "/api/v1/namespaces/default/pods"
	const rcsPath = "/api/v1/namespaces/default/replicationcontrollers"
	for _, p := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"host"},"spec":{"hostNetwork":true,"nodeName":"n1","containers":[{"name":"c","image":"x"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"plain"},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"x"}]}}`,
	} {
		if r := do(t, ts, "POST", podsPath, "", p); r.code != 201 {
			t.Fatalf("create: %d %v", r.code, r.obj)
		}
	}
	rc := `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc"},"spec":{"selector":{"a":"b"},
		"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`
	if r := do(t, ts, "POST", rcsPath, "", rc); r.code != 201 {
		t.Fatalf("create: %d %v", r.code, r.obj)
	}
	for _, c := range []struct {
		path, sel string
		want      []string
	}{
		{podsPath, "spec.hostNetwork=false", []string{"plain"}},
		{podsPath, "spec.hostNetwork=true", []string{"host"}},
		{podsPath, "spec.nodeName=n1", []string{"host"}},
		{podsPath, "spec.host=n1", []string{"host"}},
		{podsPath, "spec.restartPolicy=Always", []string{"host"}},
		{podsPath, "spec.schedulerName=default-scheduler", []string{"host", "plain"}},
		{podsPath, "status.podIPs=", []string{"host", "plain"}},
		{rcsPath, "status.replicas=0", []string{"rc"}},
		{rcsPath, "status.replicas=", nil},
	} {
		for _, rv := range []string{"", "&resourceVersion=0"} { // storage and watch cache
			r := do(t, ts, "GET", c.path+"?fieldSelector="+c.sel+rv, "", "")
			if r.code != 200 {
				t.Fatalf("%s: %d %v", c.sel, r.code, r.obj)
			}
			if diff := cmp.Diff(c.want, names(r.obj)); diff != "" {
				t.Errorf("%s%s (-want +got):\n%s", c.sel, rv, diff)
			}
		}
	}
	for path, want := range map[string]string{
		podsPath + "?fieldSelector=spec.nodename=n1":                     "field label not supported: spec.nodename",
		"/apis/apps/v1/replicasets?fieldSelector=status.replicas=1":      `"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"`,
		"/apis/batch/v1/jobs?fieldSelector=status.failed=1":              `field label "status.failed" not supported for Job`,
		"/api/v1/nodes?fieldSelector=metadata.namespace=x":               "field label not supported: metadata.namespace",
		"/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.x=1": "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.x",
	} {
		if r := do(t, ts, "GET", path, "", ""); r.code != 400 || at(r.obj, "message") != want {
			t.Errorf("%s: %d %v, want 400 %q", path, r.code, r.obj, want)
		}
	}
	// Kinds without a conversion function accept metadata.namespace, even
	// cluster-scoped: it reads "".
	if r := do(t, ts, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles?fieldSelector=metadata.namespace=x", "", ""); r.code != 200 || len(names(r.obj)) != 0 {
		t.Errorf("clusterroles by namespace: %d %v", r.code, r.obj)
	}
}
