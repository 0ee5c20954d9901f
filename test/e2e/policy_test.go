package e2e

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/audit"
	"github.com/listwatch/listwatch/internal/server/audit/audittest"
)

// TestValidatingAdmissionPolicies drives ValidatingAdmissionPolicies from
// the binary: kubectl applies policies and bindings; writes are denied,
// warned and audited with kube's messages; params come from a ConfigMap
// and from a custom resource; namespaceSelector picks the namespaces; a
// policy whose binding cannot find its params follows failurePolicy.
func TestValidatingAdmissionPolicies(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.log")
	s := startServer(t, "--audit-policy-file", writeFile(t, dir, "policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"),
		"--audit-log-path", logPath)
	type answer struct {
		code    int
		body    map[string]any
		warning string
	}
	call := func(method, path, body string) answer {
		t.Helper()
		resp := s.do(t, "", method, path, body)
		defer resp.Body.Close()
		var a answer
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &a.body)
		a.code, a.warning = resp.StatusCode, strings.Join(resp.Header.Values("Warning"), "\n")
		return a
	}
	mustCall := func(method, path, body string, want int) answer {
		t.Helper()
		a := call(method, path, body)
		if a.code != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, a.code, a.body, want)
		}
		return a
	}
	apply := func(yaml string) {
		t.Helper()
		kubectl := needKubectl(t)
		cmd := exec.CommandContext(context.Background(), kubectl, "--server", s.URL, "apply", "-f", writeFile(t, dir, "p.yaml", yaml))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	for _, ns := range []string{"guarded", "free"} {
		mustCall("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`","labels":{"guard":"`+ns+`"}}}`, 201)
	}
	mustCall("POST", "/api/v1/namespaces/guarded/configmaps", `{"metadata":{"name":"limits"},"data":{"max":"1"}}`, 201)

	apply(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-keys}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
    excludeResourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: ["*"], resources: [configmaps], resourceNames: [limits]}
  variables:
  - {name: keys, expression: "has(object.data) ? size(object.data) : 0"}
  validations:
  - expression: "variables.keys <= int(params.data.max)"
    messageExpression: "'too many keys: ' + string(variables.keys)"
    reason: Forbidden
  - expression: "!has(object.metadata.labels) || !('bad' in object.metadata.labels)"
  auditAnnotations:
  - {key: keys, valueExpression: "string(variables.keys)"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: deny-guarded}
spec:
  policyName: max-keys
  validationActions: [Deny]
  paramRef: {name: limits, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {guard: guarded}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: warn-free}
spec:
  policyName: max-keys
  validationActions: [Warn, Audit]
  paramRef: {name: limits, namespace: guarded, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {guard: free}}
`)

	t.Run("deny", func(t *testing.T) {
		a := mustCall("POST", "/api/v1/namespaces/guarded/configmaps", `{"metadata":{"name":"two"},"data":{"a":"1","b":"2"}}`, 403)
		want := `configmaps "two" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'deny-guarded' denied request: too many keys: 2`
		if a.body["message"] != want || a.body["reason"] != "Forbidden" {
			t.Errorf("got %v, want message %q, reason Forbidden", a.body, want)
		}
		a = mustCall("POST", "/api/v1/namespaces/guarded/configmaps", `{"metadata":{"name":"bad","labels":{"bad":"x"}}}`, 422)
		want = `configmaps "bad" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'deny-guarded' denied request: failed expression: !has(object.metadata.labels) || !('bad' in object.metadata.labels)`
		if a.body["message"] != want || a.body["reason"] != "Invalid" {
			t.Errorf("got %v, want message %q, reason Invalid", a.body, want)
		}
		mustCall("POST", "/api/v1/namespaces/guarded/configmaps", `{"metadata":{"name":"one"},"data":{"a":"1"}}`, 201)
		// An update is checked too; the excluded name is not.
		mustCall("PUT", "/api/v1/namespaces/guarded/configmaps/one", `{"metadata":{"name":"one"},"data":{"a":"1","b":"2"}}`, 403)
		mustCall("PUT", "/api/v1/namespaces/guarded/configmaps/limits", `{"metadata":{"name":"limits"},"data":{"max":"2","b":"2"}}`, 200)
		// Params are read from the watch cache: the new limit applies once
		// a cached read sees it.
		waitFor(t, "the new params in the cache", func() bool {
			data, _ := call("GET", "/api/v1/namespaces/guarded/configmaps/limits?resourceVersion=0", "").body["data"].(map[string]any)
			return data["max"] == "2"
		})
		mustCall("POST", "/api/v1/namespaces/guarded/configmaps", `{"metadata":{"name":"two"},"data":{"a":"1","b":"2"}}`, 201)
	})
	t.Run("status", func(t *testing.T) {
		const path = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/max-keys"
		observed := func() any {
			st, _ := mustCall("GET", path, "", 200).body["status"].(map[string]any)
			return st["observedGeneration"]
		}
		waitFor(t, "the policy's status.observedGeneration", func() bool { return observed() == float64(1) })
		// A change of spec is a new generation, observed in its turn.
		mustCall("PUT", path, strings.Replace(string(mustGetRaw(t, s, path)), `"Forbidden"`, `"Forbidden","message":"over the limit"`, 1), 200)
		waitFor(t, "observedGeneration 2", func() bool { return observed() == float64(2) })
	})
	t.Run("warn and audit", func(t *testing.T) {
		a := mustCall("POST", "/api/v1/namespaces/free/configmaps", `{"metadata":{"name":"audited"},"data":{"a":"1","b":"2","c":"3"}}`, 201)
		want := `299 - "Validation failed for ValidatingAdmissionPolicy 'max-keys' with binding 'warn-free': too many keys: 3"`
		if a.warning != want {
			t.Errorf("Warning %q, want %q", a.warning, want)
		}
	})
	t.Run("namespace not selected", func(t *testing.T) {
		mustCall("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"many"},"data":{"a":"1","b":"2","c":"3"}}`, 201)
	})
	t.Run("params not found", func(t *testing.T) {
		mustCall("DELETE", "/api/v1/namespaces/guarded/configmaps/limits", "", 200)
		// Params are read from the watch cache, as kube's from an informer:
		// the delete is seen once a cached read no longer finds them.
		waitFor(t, "the deleted params gone from the cache", func() bool {
			return call("GET", "/api/v1/namespaces/guarded/configmaps/limits?resourceVersion=0", "").code == http.StatusNotFound
		})
		a := mustCall("POST", "/api/v1/namespaces/guarded/configmaps", `{"metadata":{"name":"x"}}`, 422)
		want := "ValidatingAdmissionPolicy 'max-keys' with binding 'deny-guarded' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
		if msg, _ := a.body["message"].(string); !strings.HasSuffix(msg, want) {
			t.Errorf("message %q, want it to end with %q", msg, want)
		}
		// failurePolicy Ignore lets configuration errors pass.
		req, err := http.NewRequestWithContext(t.Context(), "PATCH", s.URL+"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/max-keys",
			strings.NewReader(`{"spec":{"failurePolicy":"Ignore"}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/merge-patch+json")
		resp, err := s.httpClient().Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("patching the policy: %v %v", resp, err)
		}
		resp.Body.Close()
		mustCall("POST", "/api/v1/namespaces/guarded/configmaps", `{"metadata":{"name":"x"}}`, 201)
	})
	t.Run("custom resource params", func(t *testing.T) {
		mustCall("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", `{"metadata":{"name":"limits.example.com"},"spec":{"group":"example.com","scope":"Cluster",
			"names":{"plural":"limits","singular":"limit","kind":"Limit"},
			"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"maxReplicas":{"type":"integer"}}}}}]}}`, 201)
		mustCall("POST", "/apis/example.com/v1/limits", `{"apiVersion":"example.com/v1","kind":"Limit","metadata":{"name":"small","labels":{"size":"small"}},"maxReplicas":2}`, 201)
		mustCall("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", `{"metadata":{"name":"replicas"},"spec":{
			"paramKind":{"apiVersion":"example.com/v1","kind":"Limit"},
			"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
			"matchConditions":[{"name":"has-replicas","expression":"has(object.data) && 'replicas' in object.data"}],
			"validations":[{"expression":"int(object.data.replicas) <= params.maxReplicas","message":"replicas over the limit"}]}}`, 201)
		mustCall("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", `{"metadata":{"name":"replicas"},"spec":{
			"policyName":"replicas","validationActions":["Deny"],"paramRef":{"selector":{"matchLabels":{"size":"small"}},"parameterNotFoundAction":"Allow"}}}`, 201)
		a := mustCall("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"r3"},"data":{"replicas":"3"}}`, 422)
		if want := "ValidatingAdmissionPolicy 'replicas' with binding 'replicas' denied request: replicas over the limit"; !strings.HasSuffix(a.body["message"].(string), want) {
			t.Errorf("message %q, want it to end with %q", a.body["message"], want)
		}
		mustCall("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"r2"},"data":{"replicas":"2"}}`, 201)
		mustCall("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"none"}}`, 201) // match condition false
	})
	t.Run("invalid policy", func(t *testing.T) {
		a := mustCall("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", `{"metadata":{"name":"broken"},"spec":{
			"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
			"validations":[{"expression":"object.metadata.name ==","reason":"Teapot"},{"expression":"params.x"}]}}`, 422)
		causes, _ := a.body["details"].(map[string]any)["causes"].([]any)
		fields := map[string]bool{}
		for _, c := range causes {
			fields[c.(map[string]any)["field"].(string)] = true
		}
		for _, f := range []string{"spec.validations[0].expression", "spec.validations[0].reason", "spec.validations[1].expression"} {
			if !fields[f] {
				t.Errorf("no cause for %s in %v", f, causes)
			}
		}
	})
	t.Run("audit annotations", func(t *testing.T) {
		s.stop(t) // closes the log
		found := map[string]string{}
		for _, ev := range audittest.ReadLog(t, logPath) {
			if ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Name == "audited" && ev.Stage == audit.StageResponseComplete {
				maps.Copy(found, ev.Annotations)
			}
		}
		for k, v := range map[string]string{
			"max-keys/keys": "3",
			"validation.policy.admission.k8s.io/validation_failure": `[{"message":"too many keys: 3","policy":"max-keys","binding":"warn-free","expressionIndex":0,"validationActions":["Warn","Audit"]}]`,
		} {
			if found[k] != v {
				t.Errorf("audit annotation %s = %q, want %q (all: %v)", k, found[k], v, found)
			}
		}
	})
}

// mustGetRaw returns the body of a GET answered 200.
func mustGetRaw(t *testing.T, s *server, path string) []byte {
	t.Helper()
	resp := s.do(t, "", "GET", path, "")
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return b
}
