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
// status only, so the write is taken, and an invalid status refused with
// the status's causes; a write of the main resource still meets the
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
