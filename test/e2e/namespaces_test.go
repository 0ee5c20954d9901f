package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/testwait"
)

// TestNamespaceDeletionWithKubectl: from the binary, kubectl delete
// namespace returns once the namespace and its contents are gone; while a
// finalizer holds a ConfigMap the namespace stays Terminating with kube's
// conditions saying so, and refuses new content; once the finalizer goes,
// so does the namespace.
func TestNamespaceDeletionWithKubectl(t *testing.T) {
	kubectl := needKubectl(t)
	s := startServer(t, "--namespace-deletion-grace-period=100ms") // kube waits 5 s
	run, must := kubectlIn(t, kubectl, s.URL)

	must("create", "namespace", "plain")
	must("-n", "plain", "create", "configmap", "a", "--from-literal=k=v")
	must("delete", "namespace", "plain") // waits until it is gone
	if out, err := run("get", "namespace", "plain"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("namespace after kubectl delete: %v %s, want NotFound", err, out)
	}

	must("create", "namespace", "held")
	must("-n", "held", "create", "configmap", "c")
	must("-n", "held", "patch", "configmap", "c", "-p", `{"metadata":{"finalizers":["example.com/x"]}}`)
	must("delete", "namespace", "held", "--wait=false")
	const remaining = `{.status.phase} {.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].message}`
	want := "Terminating Some content in the namespace has finalizers remaining: example.com/x in 1 resource instances"
	testwait.Until(t, 5*time.Second, "the namespace's NamespaceFinalizersRemaining condition", func() bool {
		out, _ := run("get", "namespace", "held", "-o", "jsonpath="+remaining)
		return out == want
	})
	yaml := must("get", "namespace", "held", "-o", "yaml")
	for _, line := range []string{"phase: Terminating", "reason: SomeResourcesRemain", "message: 'Some resources are remaining: configmaps. has 1 resource instances'", "- kubernetes"} {
		if !strings.Contains(yaml, line) {
			t.Errorf("kubectl get namespace held -o yaml lacks %q:\n%s", line, yaml)
		}
	}
	if out, err := run("-n", "held", "create", "configmap", "late"); err == nil || !strings.Contains(out, "unable to create new content in namespace held because it is being terminated") {
		t.Errorf("create in a Terminating namespace: %v %s, want it refused", err, out)
	}

	must("-n", "held", "patch", "configmap", "c", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	// The controller looks again after kube's estimate (8 s) or at the
	// namespace's next change: make one.
	must("label", "namespace", "held", "touched=yes")
	must("delete", "namespace", "held", "--ignore-not-found") // waits until it is gone
	if out, err := run("get", "namespace", "held"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("namespace after its content's finalizer went: %v %s, want NotFound", err, out)
	}
}
