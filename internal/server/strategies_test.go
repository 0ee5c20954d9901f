package server

import (
	"net/http"
	"testing"
)

const deployments = "/apis/apps/v1/namespaces/default/deployments"

// TestBuiltinScale checks the scale subresource of the built-in kinds that
// have one, as kube's ScaleREST of each: the Scale reads spec.replicas and
// status.replicas and reports the selector as kube's label selector
// String() writes it (requirements sorted by key, in-values sorted), an
// update moves the replicas to the object, bumping its generation, a
// negative count is kube's ValidateScale error on the Scale, and strategic
// merge patches are accepted (the Scale is a Go type there).
func TestBuiltinScale(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	const scale = deployments + "/web/scale"
	template := `"template":{"metadata":{"labels":{"app":"web","tier":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
	runSteps(t, ts, []step{
		{name: "discovery", method: "GET", path: "/apis/apps/v1", code: 200, check: func(t *testing.T, r response) {
			var found bool
			for _, res := range r.obj["resources"].([]any) {
				res := res.(map[string]any)
				if res["name"] == "deployments/scale" {
					found = res["group"] == "autoscaling" && res["kind"] == "Scale"
				}
			}
			if !found {
				t.Errorf("no deployments/scale of kind autoscaling Scale in %v", r.obj["resources"])
			}
		}},
		{name: "create", method: "POST", path: deployments, code: 201, body: `{"metadata":{"name":"web"},"spec":{"replicas":2,
			"selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["b","a"]},{"key":"canary","operator":"DoesNotExist"}]},` + template + `}}`},
		{name: "status", method: "PATCH", path: deployments + "/web/status", body: `{"status":{"replicas":1},"spec":{"replicas":9}}`, code: 200,
			want: map[string]any{"spec.replicas": "2", "status.replicas": "1"}}, // the spec is not the status subresource's
		{name: "get", method: "GET", path: scale, code: 200, want: map[string]any{
			"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata.name": "web",
			"spec.replicas": "2", "status.replicas": "1", "status.selector": "app=web,!canary,tier in (a,b)",
		}},
		{name: "update", method: "PUT", path: scale, body: `{"metadata":{"name":"web"},"spec":{"replicas":3}}`, code: 200,
			want: map[string]any{"spec.replicas": "3", "status.replicas": "1"}},
		{name: "object after update", method: "GET", path: deployments + "/web", code: 200,
			want: map[string]any{"spec.replicas": "3", "metadata.generation": "2", "status.replicas": "1"}},
		{name: "negative", method: "PUT", path: scale, body: `{"metadata":{"name":"web"},"spec":{"replicas":-1}}`, code: 422,
			want:  map[string]any{"message": `Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
			check: wantCauses("spec.replicas: Invalid value: -1: must be greater than or equal to 0")},
		{name: "replication controller", method: "POST", path: "/api/v1/namespaces/default/replicationcontrollers", code: 201,
			body: `{"metadata":{"name":"rc"},"spec":{"replicas":1,"selector":{"b":"2","a":"1"},"template":{"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`},
		{name: "replication controller scale", method: "GET", path: "/api/v1/namespaces/default/replicationcontrollers/rc/scale", code: 200,
			want: map[string]any{"spec.replicas": "1", "status.selector": "a=1,b=2"}},
	})
	r := exchange(t, ts, "PATCH", scale, http.Header{"Content-Type": {"application/strategic-merge-patch+json"}}, `{"spec":{"replicas":4}}`)
	if r.code != http.StatusOK || at(r.obj, "spec.replicas") != "4" {
		t.Errorf("strategic merge patch: %d %v", r.code, r.obj)
	}
	for _, kind := range []string{"replicasets", "statefulsets"} {
		if r := exchange(t, ts, "GET", "/apis/apps/v1/namespaces/default/"+kind+"/none/scale", nil, ""); r.code != http.StatusNotFound {
			t.Errorf("%s/scale of a missing object: %d %v", kind, r.code, r.obj)
		}
	}
	if r := exchange(t, ts, "GET", "/apis/apps/v1/namespaces/default/daemonsets/none/scale", nil, ""); r.code != http.StatusNotFound || at(r.obj, "reason") != "NotFound" {
		t.Errorf("daemonsets/scale, which kube has not: %d %v", r.code, r.obj)
	}
}

// TestPodPrepareForCreate checks what kube's pod strategy sets on create:
// status reset to phase Pending with the QoS class kube computes, the
// PodScheduled condition of a gated pod, and generation 1; an update
// keeps the stored status.
func TestPodPrepareForCreate(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	const pods = "/api/v1/namespaces/default/pods"
	pod := func(name, extra, resources string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{` + extra + `"containers":[{"name":"c","image":"nginx"` + resources + `}]},"status":{"phase":"Running","podIP":"10.0.0.1"}}`
	}
	runSteps(t, ts, []step{
		{name: "best effort", method: "POST", path: pods, body: pod("a", "", ""), code: 201, check: func(t *testing.T, r response) {
			if st := r.obj["status"]; at(r.obj, "status.phase") != "Pending" || at(r.obj, "status.qosClass") != "BestEffort" || at(r.obj, "status.podIP") != nil {
				t.Errorf("status: %v", st)
			}
			if at(r.obj, "metadata.generation") != "1" {
				t.Errorf("generation: %v", r.obj["metadata"])
			}
		}},
		{name: "guaranteed", method: "POST", path: pods, body: pod("b", "", `,"resources":{"limits":{"cpu":"1","memory":"1Gi"}}`), code: 201,
			want: map[string]any{"status.qosClass": "Guaranteed"}},
		{name: "guaranteed, requests written otherwise", method: "POST", path: pods, body: pod("b2", "", `,"resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"1000m","memory":"1024Mi"}}`), code: 201,
			want: map[string]any{"status.qosClass": "Guaranteed"}},
		{name: "burstable", method: "POST", path: pods, body: pod("c", "", `,"resources":{"requests":{"cpu":"100m"}}`), code: 201,
			want: map[string]any{"status.qosClass": "Burstable"}},
		{name: "pod-level resources decide", method: "POST", path: pods, body: pod("d", `"resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"1","memory":"1Gi"}},`, `,"resources":{"requests":{"cpu":"100m"}}`), code: 201,
			want: map[string]any{"status.qosClass": "Guaranteed"}},
		{name: "scheduling gated", method: "POST", path: pods, body: pod("e", `"schedulingGates":[{"name":"g"}],`, ""), code: 201,
			want: map[string]any{"status.conditions.0.type": "PodScheduled", "status.conditions.0.status": "False", "status.conditions.0.reason": "SchedulingGated",
				"status.conditions.0.message": "Scheduling is blocked due to non-empty scheduling gates"}},
		{name: "update keeps status", method: "PATCH", path: pods + "/a", body: `{"metadata":{"labels":{"x":"y"}},"status":{"phase":"Running"}}`, code: 200,
			want: map[string]any{"status.phase": "Pending", "status.qosClass": "BestEffort", "metadata.generation": "1"}},
		{name: "status subresource", method: "PATCH", path: pods + "/a/status", body: `{"status":{"phase":"Running"}}`, code: 200,
			want: map[string]any{"status.phase": "Running", "status.qosClass": "BestEffort"}},
	})
}

// TestCreateOnUpdateAndDeletedObject checks two storage choices of kube's
// registries: a PUT creates a missing lease, limit range, endpoints or
// service (their strategies AllowCreateOnUpdate) but not a missing
// configmap, and a DELETE answers the deleted pod, service or storage
// class (ReturnDeletedObject) but a Status for a configmap.
func TestCreateOnUpdateAndDeletedObject(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	const ns = "/api/v1/namespaces/default/"
	runSteps(t, ts, []step{
		{name: "put lease", method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/default/leases/l", body: `{"metadata":{"name":"l"}}`, code: 201},
		{name: "put limit range", method: "PUT", path: ns + "limitranges/l", body: `{"metadata":{"name":"l"}}`, code: 201},
		{name: "put endpoints", method: "PUT", path: ns + "endpoints/e", body: `{"metadata":{"name":"e"}}`, code: 201},
		{name: "put service", method: "PUT", path: ns + "services/s", body: `{"metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}`, code: 201},
		{name: "put configmap", method: "PUT", path: ns + "configmaps/c", body: `{"metadata":{"name":"c"}}`, code: 404},
		{name: "pod", method: "POST", path: ns + "pods", body: `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, code: 201},
		{name: "delete pod", method: "DELETE", path: ns + "pods/p", code: 200, want: map[string]any{"kind": "Pod", "metadata.name": "p"}},
		{name: "delete service", method: "DELETE", path: ns + "services/s", code: 200, want: map[string]any{"kind": "Service", "metadata.name": "s"}},
		{name: "storage class", method: "POST", path: "/apis/storage.k8s.io/v1/storageclasses", body: `{"metadata":{"name":"sc"},"provisioner":"example.com/p"}`, code: 201},
		{name: "delete storage class", method: "DELETE", path: "/apis/storage.k8s.io/v1/storageclasses/sc", code: 200, want: map[string]any{"kind": "StorageClass"}},
		{name: "configmap", method: "POST", path: ns + "configmaps", body: `{"metadata":{"name":"c"}}`, code: 201},
		{name: "delete configmap", method: "DELETE", path: ns + "configmaps/c", code: 200, want: map[string]any{"kind": "Status", "status": "Success"}},
	})
}
