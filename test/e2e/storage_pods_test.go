package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const storagePodsManifests = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fixed}
provisioner: example.com/csi
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: fixed
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {topology.kubernetes.io/zone: z1, topology.kubernetes.io/region: r1}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  containers: [{name: c, image: nginx}]
`

// legacyBinding binds pod api through the bindings collection.
const legacyBinding = `apiVersion: v1
kind: Binding
metadata: {name: api}
target: {kind: Node, name: n1}
`

// TestStorageAndBindingWithKubectl drives kube's storage admission
// plugins and pods/binding from the binary with kubectl: a new claim gets
// kubernetes.io/pvc-protection (StorageObjectInUseProtection), growing a
// bound claim whose class does not allow expansion is refused with kube's
// message (PersistentVolumeClaimResize), and a Binding of a pod to a node
// gives the pod the node and its zone and region labels
// (PodTopologyLabels).
func TestStorageAndBindingWithKubectl(t *testing.T) {
	kubectl := needKubectl(t)
	s := startServer(t)
	dir := t.TempDir()
	manifests, binding := filepath.Join(dir, "m.yaml"), filepath.Join(dir, "binding.json")
	if err := os.WriteFile(manifests, []byte(storagePodsManifests), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binding, []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"kind":"Node","name":"n1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run, must := kubectlIn(t, kubectl, s.URL)
	must("apply", "-f", manifests)
	if got := must("get", "pvc", "data", "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(got, "kubernetes.io/pvc-protection") {
		t.Errorf("claim's finalizers %s, want kubernetes.io/pvc-protection", got)
	}
	// Only a bound claim may grow; kubectl 1.20 has no --subresource.
	const claim = "/api/v1/namespaces/default/persistentvolumeclaims/data"
	pvc, _ := s.expect(t, "GET", claim, "", 200)
	pvc["status"] = map[string]any{"phase": "Bound", "capacity": map[string]any{"storage": "1Gi"}}
	s.expect(t, "PUT", claim+"/status", jsonOf(t, pvc), 200)
	out, err := run("patch", "pvc", "data", "-p", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	want := `persistentvolumeclaims "data" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("growing the claim: %v\n%s\nwant %q", err, out, want)
	}

	must("create", "--raw", "/api/v1/namespaces/default/pods/web/binding", "-f", binding)
	got := must("get", "pod", "web", "-o", `jsonpath={.spec.nodeName} {.metadata.labels.topology\.kubernetes\.io/zone} {.metadata.labels.topology\.kubernetes\.io/region} {.status.conditions[?(@.type=="PodScheduled")].status}`)
	if got != "n1 z1 r1 True" {
		t.Errorf("bound pod: %q, want node n1, zone z1, region r1, scheduled", got)
	}
	if out, err := run("create", "--raw", "/api/v1/namespaces/default/pods/web/binding", "-f", binding); err == nil ||
		!strings.Contains(out, `pod web is already assigned to node "n1"`) {
		t.Errorf("binding again: %v\n%s", err, out)
	}
	// kubectl creates a Binding manifest in bindings, whose writes
	// PodTopologyLabels leaves alone (it acts on pods).
	legacy := filepath.Join(dir, "legacy.yaml")
	if err := os.WriteFile(legacy, []byte(legacyBinding), 0o600); err != nil {
		t.Fatal(err)
	}
	// The answer is kube's Success Status, which kubectl names so.
	if out := must("create", "-f", legacy); out != "status/<unknown> created" {
		t.Errorf("kubectl create of a Binding: %q", out)
	}
	if got := must("get", "pod", "api", "-o", `jsonpath={.spec.nodeName} {.metadata.labels}`); got != "n1" {
		t.Errorf("pod bound through bindings: %q, want node n1, no labels", got)
	}
}

// kubectlIn returns kubectl run in namespace default of the server at
// url: run answers its trimmed output and error, must fails the test on
// an error.
func kubectlIn(t *testing.T, kubectl, url string) (run func(args ...string) (string, error), must func(args ...string) string) {
	run = func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), lineTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--server", url, "-n", "default"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	must = func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	return run, must
}
