package server

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const (
	mutatingPolicies = admissionV1 + "/mutatingadmissionpolicies"
	mutatingBindings = admissionV1 + "/mutatingadmissionpolicybindings"
)

// TestMutatingPolicyKinds creates a MutatingAdmissionPolicy and reads back
// kube's defaults; invalid ones get kube's causes.
func TestMutatingPolicyKinds(t *testing.T) {
	ts := newTestServer(t)
	code, m := call(t, ts, "POST", mutatingPolicies, mediaJSON, `{"metadata":{"name":"p"},"spec":{"reinvocationPolicy":"Never",
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{}"}}]}}`)
	if code != http.StatusCreated || at(m, "spec.failurePolicy") != "Fail" || at(m, "spec.matchConstraints.matchPolicy") != "Equivalent" ||
		at(m, "spec.matchConstraints.resourceRules.0.scope") != "*" || at(m, "metadata.generation") == nil {
		t.Fatalf("create: %d %v", code, m)
	}
	code, m = call(t, ts, "POST", mutatingBindings, mediaJSON, `{"metadata":{"name":"b"},"spec":{"policyName":"p"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create binding: %d %v", code, m)
	}
	for _, tc := range []struct {
		spec   string
		causes []string // sorted; each a prefix of one cause
	}{
		{`"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["DELETE"],"resources":["configmaps"]}]},
			"mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"[]"},"applyConfiguration":{"expression":"Object{}"}}]`,
			[]string{`spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"`,
				`spec.mutations[0].applyConfiguration: Invalid value: "{applyConfiguration}": must not be specified when patchType is JSONPatch`,
				`spec.mutations[0].jsonPatch.expression: Invalid value: "[]": must evaluate to list(JSONPatch) but got list(dyn)`,
				`spec.reinvocationPolicy: Required value`}},
		{`"reinvocationPolicy":"Always","matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
			"mutations":[{"patchType":"ApplyConfiguration"},{"patchType":"Merge"},{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"object"}},
			{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: 1}]"}}]`,
			[]string{`spec.mutations[0].applyConfiguration: Required value: must be specified when patchType is ApplyConfiguration`,
				`spec.mutations[1].patchType: Unsupported value: "Merge": supported values: "ApplyConfiguration", "JSONPatch"`,
				`spec.mutations[2].applyConfiguration.expression: Invalid value: "object": must evaluate to Object but got dyn`,
				`spec.mutations[3].jsonPatch.expression: Invalid value: "[JSONPatch{op: 1}]": compilation failed: ERROR: <input>:1:`,
				`spec.reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"`}},
		{`"reinvocationPolicy":"Never","matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]}`,
			[]string{`spec.mutations: Required value: mutations must contain at least one item`}},
	} {
		code, m := call(t, ts, "POST", mutatingPolicies, mediaJSON, `{"metadata":{"name":"bad"},"spec":{`+tc.spec+`}}`)
		if code != http.StatusUnprocessableEntity {
			t.Fatalf("invalid policy: %d %v", code, m)
		}
		got := causes(m)
		ok := len(got) == len(tc.causes)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.HasPrefix(got[i], tc.causes[i])
		}
		if !ok {
			t.Errorf("causes of %s:\n%s\nwant\n%s", tc.spec, strings.Join(got, "\n"), strings.Join(tc.causes, "\n"))
		}
	}
}

// TestMutatingPolicies: a created object comes back mutated by an apply
// configuration and by a JSON patch reading its param; an expression that
// fails denies the write under failurePolicy Fail and is skipped under
// Ignore; a policy with reinvocationPolicy IfNeeded runs again after a
// later policy changed the object, one with Never does not; the mutated
// object is validated as any write.
func TestMutatingPolicies(t *testing.T) {
	ts := newTestServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	mustCreate := func(path, body string) {
		t.Helper()
		if code, m := call(t, ts, "POST", path, mediaJSON, body); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %v", path, code, m)
		}
	}
	policy := func(name, reinvoke, failure, selector, patchType, expr, extra string) {
		t.Helper()
		field := map[string]string{"ApplyConfiguration": "applyConfiguration", "JSONPatch": "jsonPatch"}[patchType]
		mustCreate(mutatingPolicies, `{"metadata":{"name":"`+name+`"},"spec":{"reinvocationPolicy":"`+reinvoke+`","failurePolicy":"`+failure+`",
			"matchConstraints":{"objectSelector":{"matchLabels":{"case":"`+selector+`"}},
			"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["configmaps"]}]},`+extra+`
			"mutations":[{"patchType":"`+patchType+`","`+field+`":{"expression":`+strconv.Quote(expr)+`}}]}}`)
	}
	bind := func(name, paramRef string) {
		t.Helper()
		mustCreate(mutatingBindings, `{"metadata":{"name":"`+name+`"},"spec":{"policyName":"`+name+`"`+paramRef+`}}`)
	}
	mustCreate(cms, `{"metadata":{"name":"settings"},"data":{"owner":"team-a"}}`)

	policy("add-label", "Never", "Fail", "mutate", "ApplyConfiguration", `Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}`, "")
	bind("add-label", "")
	policy("annotate", "Never", "Fail", "mutate", "JSONPatch",
		`[JSONPatch{op: "add", path: "/metadata/annotations", value: {}}, JSONPatch{op: "add", path: "/metadata/annotations/" + jsonpatch.escapeKey("team/owner"), value: params.data.owner}]`,
		`"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},`)
	bind("annotate", `,"paramRef":{"name":"settings","parameterNotFoundAction":"Deny"}`)
	code, m := call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"a","labels":{"case":"mutate"}},"data":{"k":"v"}}`)
	if code != http.StatusCreated || at(m, "metadata.labels.mutated") != "yes" || at(m, "metadata.labels.case") != "mutate" ||
		at(m, "metadata.annotations.team/owner") != "team-a" {
		t.Fatalf("create: %d %v", code, m)
	}

	// A failing expression: denied under Fail, skipped under Ignore.
	broken := `Object{metadata: Object.metadata{labels: {"x": object.data.missing}}}`
	policy("broken-fail", "Never", "Fail", "broken-fail", "ApplyConfiguration", broken, "")
	bind("broken-fail", "")
	policy("broken-ignore", "Never", "Ignore", "broken-ignore", "ApplyConfiguration", broken, "")
	bind("broken-ignore", "")
	code, m = call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"b","labels":{"case":"broken-fail"}},"data":{"k":"v"}}`)
	want := "policy 'broken-fail' with binding 'broken-fail' denied request: expression '" + broken + "' resulted in error: no such key: missing"
	if code != http.StatusForbidden || at(m, "message") != want || at(m, "reason") != "Invalid" || at(m, "details.causes.0.message") != want {
		t.Fatalf("failing policy, Fail: %d %v", code, m)
	}
	code, m = call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"c","labels":{"case":"broken-ignore"}},"data":{"k":"v"}}`)
	if code != http.StatusCreated || at(m, "metadata.labels.x") != nil {
		t.Fatalf("failing policy, Ignore: %d %v", code, m)
	}

	// a-ifneeded and a-never record label b, which b-set, after them, sets:
	// a-ifneeded (IfNeeded) runs again and sees it, a-never does not.
	seen := func(key string) string {
		return `Object{metadata: Object.metadata{annotations: {"` + key + `": "b" in object.metadata.labels ? object.metadata.labels["b"] : "none"}}}`
	}
	policy("a-ifneeded", "IfNeeded", "Fail", "reinvoke", "ApplyConfiguration", seen("ifneeded"), "")
	bind("a-ifneeded", "")
	policy("a-never", "Never", "Fail", "reinvoke", "ApplyConfiguration", seen("never"), "")
	bind("a-never", "")
	policy("b-set", "Never", "Fail", "reinvoke", "ApplyConfiguration", `Object{metadata: Object.metadata{labels: {"b": "set"}}}`, "")
	bind("b-set", "")
	code, m = call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"d","labels":{"case":"reinvoke"}},"data":{"k":"v"}}`)
	if code != http.StatusCreated || at(m, "metadata.annotations.ifneeded") != "set" || at(m, "metadata.annotations.never") != "none" {
		t.Fatalf("reinvocation: %d %v", code, m)
	}

	// The mutated object is validated: a label value kube refuses.
	policy("bad-label", "Never", "Fail", "invalid", "ApplyConfiguration", `Object{metadata: Object.metadata{labels: {"bad": "no spaces allowed"}}}`, "")
	bind("bad-label", "")
	code, m = call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"e","labels":{"case":"invalid"}}}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(m["message"]), "metadata.labels") {
		t.Fatalf("invalid mutation: %d %v", code, m)
	}
}

// TestMutatingPoliciesBeforeWebhooks: the mutating policies run before the
// mutating webhooks, and each kind is reinvoked for the other's change, as
// kube's chain does: a policy (IfNeeded) records a label that a webhook
// (IfNeeded) adds; the webhook first sees the policy's annotation, the
// policy runs again and sees the label, and the webhook, seeing the
// annotation change, is called once more.
func TestMutatingPoliciesBeforeWebhooks(t *testing.T) {
	ts := newTestServer(t)
	var mu sync.Mutex
	var seen []string // the annotation each call of the webhook saw
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Request struct {
				UID    string
				Object struct {
					Metadata struct{ Annotations map[string]string } `json:"metadata"`
				} `json:"object"`
			} `json:"request"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		mu.Lock()
		seen = append(seen, in.Request.Object.Metadata.Annotations["seen"])
		mu.Unlock()
		patch := base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/labels/hook","value":"set"}]`))
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"response": map[string]any{"uid": in.Request.UID, "allowed": true, "patchType": "JSONPatch", "patch": patch}})
	}))
	t.Cleanup(hook.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))
	code, m := call(t, ts, "POST", mutatingHook, mediaJSON, fmt.Sprintf(`{"metadata":{"name":"labeller"},"webhooks":[{"name":"label.example.com",
		"clientConfig":{"url":%q,"caBundle":%q},"sideEffects":"None","admissionReviewVersions":["v1"],"reinvocationPolicy":"IfNeeded",
		"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]}]}`, hook.URL, ca))
	if code != http.StatusCreated {
		t.Fatalf("webhook: %d %v", code, m)
	}
	expr := `Object{metadata: Object.metadata{annotations: {"seen": "hook" in object.metadata.labels ? object.metadata.labels["hook"] : "none"}}}`
	code, m = call(t, ts, "POST", mutatingPolicies, mediaJSON, `{"metadata":{"name":"recorder"},"spec":{"reinvocationPolicy":"IfNeeded",
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":`+strconv.Quote(expr)+`}}]}}`)
	if code != http.StatusCreated {
		t.Fatalf("policy: %d %v", code, m)
	}
	if code, m = call(t, ts, "POST", mutatingBindings, mediaJSON, `{"metadata":{"name":"recorder"},"spec":{"policyName":"recorder"}}`); code != http.StatusCreated {
		t.Fatalf("binding: %d %v", code, m)
	}
	code, m = call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"a","labels":{"x":"y"}}}`)
	if code != http.StatusCreated || at(m, "metadata.annotations.seen") != "set" || at(m, "metadata.labels.hook") != "set" {
		t.Fatalf("create: %d %v", code, m)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []string{"none", "set"}) {
		t.Errorf("the webhook saw annotations %q, want [none set]: called after the policy, and again after its reinvocation", seen)
	}
}
