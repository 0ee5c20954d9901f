package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const protectionManifests = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: free}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: used}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: used}}]
`

// TestStorageProtectionWithKubectl: from the binary, kubectl delete of a
// claim no pod uses returns with the claim gone (kubectl waits for it);
// one a scheduled pod uses stays, held by kubernetes.io/pvc-protection,
// until the pod is deleted; a namespace holding a claim goes.
func TestStorageProtectionWithKubectl(t *testing.T) {
	kubectl := needKubectl(t)
	s := startServer(t, "--namespace-deletion-grace-period=100ms")
	manifests := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(manifests, []byte(protectionManifests), 0o600); err != nil {
		t.Fatal(err)
	}
	run, must := kubectlIn(t, kubectl, s.URL)
	must("apply", "-f", manifests)

	must("delete", "pvc", "free")
	if out, err := run("get", "pvc", "free"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("claim after kubectl delete: %v %s, want NotFound", err, out)
	}

	must("delete", "pvc", "used", "--wait=false")
	if got := must("get", "pvc", "used", "-o", "jsonpath={.status.phase} {.metadata.finalizers}"); got != "Pending [\"kubernetes.io/pvc-protection\"]" {
		t.Errorf("claim a scheduled pod uses, deleted: %q, want it held by kubernetes.io/pvc-protection", got)
	}
	must("delete", "pod", "user")
	// kubectl delete waits until the claim is gone (if it is not yet).
	must("delete", "pvc", "used", "--ignore-not-found")
	if out, err := run("get", "pvc", "used"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("claim after its pod's deletion: %v %s, want NotFound", err, out)
	}

	must("create", "namespace", "team")
	must("-n", "team", "create", "-f", manifests) // kubectl 1.20's -n: the last one given
	must("delete", "namespace", "team")
	if out, err := run("get", "namespace", "team"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("namespace after kubectl delete: %v %s, want NotFound", err, out)
	}
}
