package e2e

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// TestMutatingAdmissionPolicies drives MutatingAdmissionPolicies from the
// binary: kubectl applies a policy that adds a label by an apply
// configuration and one that adds an annotation by a JSON patch from a
// ConfigMap param; objects created by kubectl and over HTTP come back
// mutated; a policy whose expression fails denies writes under
// failurePolicy Fail and is skipped under Ignore; kubectl lists the
// policies with kube's columns.
func TestMutatingAdmissionPolicies(t *testing.T) {
	kubectl := needKubectl(t)
	dir := t.TempDir()
	s := startServer(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(context.Background(), kubectl, append([]string{"--server", s.URL}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		resp := s.do(t, "", method, path, body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
		}
		return m
	}
	call("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"owner"},"data":{"team":"storage"}}`, 201)
	run("apply", "-f", writeFile(t, dir, "policies.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: add-label}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
    excludeResourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: ["*"], resources: [configmaps], resourceNames: [owner]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"managed-by": "policy"}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-label}
spec: {policyName: add-label}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: annotate-owner}
spec:
  reinvocationPolicy: IfNeeded
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
    excludeResourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: ["*"], resources: [configmaps], resourceNames: [owner]}
  matchConditions:
  - {name: not-opted-out, expression: "!has(object.metadata.annotations) || !('skip' in object.metadata.annotations)"}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [JSONPatch{op: "add", path: "/metadata/annotations", value: {}},
         JSONPatch{op: "add", path: "/metadata/annotations/" + jsonpatch.escapeKey("example.com/owner"), value: params.data.team}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: annotate-owner}
spec:
  policyName: annotate-owner
  paramRef: {name: owner, namespace: default, parameterNotFoundAction: Deny}
`))

	run("create", "configmap", "made-by-kubectl", "--from-literal=k=v")
	var cm struct {
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(run("get", "configmap", "made-by-kubectl", "-o", "json")), &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Metadata.Labels["managed-by"] != "policy" || cm.Metadata.Annotations["example.com/owner"] != "storage" {
		t.Errorf("created by kubectl: labels %v, annotations %v", cm.Metadata.Labels, cm.Metadata.Annotations)
	}
	m := call("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"opted-out","annotations":{"skip":"yes"}}}`, 201)
	meta := m["metadata"].(map[string]any)
	if meta["labels"].(map[string]any)["managed-by"] != "policy" || meta["annotations"].(map[string]any)["example.com/owner"] != nil {
		t.Errorf("a match condition that does not hold: %v", meta)
	}

	out := run("get", "mutatingadmissionpolicies")
	if !strings.Contains(out, "MUTATIONS") || !strings.Contains(out, "annotate-owner   1           v1/ConfigMap") {
		t.Errorf("kubectl get mutatingadmissionpolicies:\n%s", out)
	}

	// An expression that fails: Fail denies, Ignore lets the write through.
	policy := `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: broken}
spec:
  failurePolicy: FAILURE
  reinvocationPolicy: Never
  matchConstraints:
    objectSelector: {matchLabels: {broken: "yes"}}
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: 'Object{data: {"x": object.data.missing}}'}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: broken}
spec: {policyName: broken}
`
	run("apply", "-f", writeFile(t, dir, "broken.yaml", strings.Replace(policy, "FAILURE", "Fail", 1)))
	m = call("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"b1","labels":{"broken":"yes"}}}`, 403)
	if want := `policy 'broken' with binding 'broken' denied request: expression 'Object{data: {"x": object.data.missing}}' resulted in error: no such key: data`; m["message"] != want {
		t.Errorf("failurePolicy Fail: message %q, want %q", m["message"], want)
	}
	run("apply", "-f", writeFile(t, dir, "broken.yaml", strings.Replace(policy, "FAILURE", "Ignore", 1)))
	call("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"b2","labels":{"broken":"yes"}}}`, 201)
}
