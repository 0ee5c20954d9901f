package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/resource"
)

// TestStatusWriteOfInvalidSpec stores a Deployment whose spec today's
// rules refuse (as one stored before a rule existed, or through etcd), and
// writes its status: kube's deployment status strategy checks metadata and
// status only, so the write is taken (an empty list of conditions left
// out, as kube's typed encoding leaves it), and an invalid status refused
// with the status's causes; a write of the main resource still meets the
// spec's rules.
func TestStatusWriteOfInvalidSpec(t *testing.T) {
	store := newMemoryStore(t)
	ts := quietServer(t, store)
	var deployments *resource.Resource
	for _, r := range resource.Builtins() {
		if r.Group == "apps" && r.Plural == "deployments" {
			deployments = r
		}
	}
	const stored = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default",` +
		`"uid":"0b5e7c1e-3f0a-4d2b-9c1e-5a7d3e2f1b00","creationTimestamp":"2026-01-02T03:04:05Z","generation":1},` +
		`"spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},` +
		`"spec":{"containers":[{"name":"Bad_Name","image":"busybox"}]}}}}`
	if _, err := store.Create(t.Context(), deployments.Key("default", "d"), []byte(stored)); err != nil {
		t.Fatal(err)
	}
	const path = "/apis/apps/v1/namespaces/default/deployments/d"
	put := func(p, body string) response {
		return exchange(t, ts, http.MethodPut, p, http.Header{"Content-Type": {mediaJSON}}, body)
	}
	withStatus := func(status string) string {
		return strings.Replace(stored, `"generation":1},`, `"generation":1},"status":`+status+`,`, 1)
	}

	got := put(path+"/status", withStatus(`{"replicas":1,"readyReplicas":1,"observedGeneration":1}`))
	if got.code != http.StatusOK {
		t.Fatalf("status write: %d %v", got.code, got.obj)
	}
	if st, _ := got.obj["status"].(map[string]any); st["readyReplicas"] == nil {
		t.Errorf("status write answered %v", got.obj)
	}

	// kube's typed encoding omits an empty list of an omitempty field.
	got = put(path+"/status", withStatus(`{"replicas":1,"conditions":[]}`))
	if st, _ := got.obj["status"].(map[string]any); got.code != http.StatusOK || st == nil || st["conditions"] != nil {
		t.Errorf("status write of no conditions: %d %v, want them left out", got.code, got.obj)
	}
	if got = exchange(t, ts, http.MethodGet, path, nil, ""); got.obj["status"] == nil || got.obj["status"].(map[string]any)["conditions"] != nil {
		t.Errorf("stored: %v, want no conditions", got.obj)
	}

	got = put(path+"/status", withStatus(`{"replicas":1,"readyReplicas":2}`))
	const tooMany = `Deployment.apps "d" is invalid: status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas`
	if got.code != http.StatusUnprocessableEntity || got.obj["message"] != tooMany {
		t.Errorf("invalid status: %d %v, want 422 %q", got.code, got.obj["message"], tooMany)
	}

	got = put(path, strings.Replace(stored, `"generation":1}`, `"generation":1,"labels":{"added":"x"}}`, 1))
	if got.code != http.StatusUnprocessableEntity || !strings.Contains(got.obj["message"].(string), "spec.template.spec.containers[0].name") {
		t.Errorf("main resource write: %d %v, want 422 for the container's name", got.code, got.obj["message"])
	}
}

// TestStatusWriteMetadata: a write through a Deployment's status takes
// the request's metadata but for the labels, as kube's deployment status
// strategy does, so that a finalizer removed there lets a deleted object go.
func TestStatusWriteMetadata(t *testing.T) {
	req, _ := deleteServer(t)
	const path = "/apis/apps/v1/namespaces/default/deployments/d"
	const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"app":"d"},"finalizers":["example.com/hold"]},` +
		`"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`
	if got := req(http.MethodPost, "/apis/apps/v1/namespaces/default/deployments", deployment); got.code != http.StatusCreated {
		t.Fatalf("create: %d %v", got.code, got.obj)
	}
	status := func(metadata string) response {
		return req(http.MethodPut, path+"/status", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":`+metadata+`,"status":{"replicas":1}}`)
	}

	got := status(`{"name":"d","labels":{"app":"other"},"annotations":{"a":"b"},"finalizers":["example.com/hold"]}`)
	if got.code != http.StatusOK {
		t.Fatalf("status write: %d %v", got.code, got.obj)
	}
	md := got.obj.Metadata()
	if labels, _ := md["labels"].(map[string]any); labels["app"] != "d" {
		t.Errorf("labels %v, want the stored ones", md["labels"])
	}
	if annotations, _ := md["annotations"].(map[string]any); annotations["a"] != "b" {
		t.Errorf("annotations %v, want the request's", md["annotations"])
	}

	if got := req(http.MethodDelete, path, ""); got.code != http.StatusOK || got.obj.MetaString("deletionTimestamp") == "" {
		t.Fatalf("delete: %d %v, want the object marked", got.code, got.obj)
	}
	if got := status(`{"name":"d"}`); got.code != http.StatusOK || finalizers(got.obj) != nil {
		t.Fatalf("finalizer removed through status: %d %v", got.code, got.obj)
	}
	if got := req(http.MethodGet, path, ""); got.code != http.StatusNotFound {
		t.Errorf("GET after the last finalizer went through status: %d", got.code)
	}
}

// TestPodStatusWriteKeeps writes a Pod's status as an old kubelet does,
// without the QoS class the server set: kube's pod status strategy keeps
// the stored one rather than refusing the write as changing it.
func TestPodStatusWriteKeeps(t *testing.T) {
	ts := quietServer(t, newMemoryStore(t))
	const path = "/api/v1/namespaces/default/pods/p"
	created := exchange(t, ts, http.MethodPost, "/api/v1/namespaces/default/pods", http.Header{"Content-Type": {mediaJSON}},
		`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	if created.code != http.StatusCreated {
		t.Fatalf("create: %d %v", created.code, created.obj)
	}
	got := exchange(t, ts, http.MethodPut, path+"/status", http.Header{"Content-Type": {mediaJSON}},
		`{"metadata":{"name":"p"},"status":{"phase":"Running"}}`)
	if st, _ := got.obj["status"].(map[string]any); got.code != http.StatusOK || st["qosClass"] != "BestEffort" || st["phase"] != "Running" {
		t.Errorf("status write without qosClass: %d %v, want 200 keeping BestEffort", got.code, got.obj)
	}
}
