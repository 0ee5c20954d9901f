package server

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/testwait"
)

// TestPolicyTypeChecking: the status controller writes each policy's
// generation and the warnings of its type checking against the custom
// resources it names, again once its spec changes.
func TestPolicyTypeChecking(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	if r := do(t, ts, "POST", crdsPath, "", `{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
		"names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true,
		"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`); r.code != http.StatusCreated {
		t.Fatalf("definition: %d %v", r.code, r.obj)
	}
	const path = admissionV1 + "/validatingadmissionpolicies"
	policy := func(expr string) string {
		return `{"metadata":{"name":"p"},"spec":{"matchConstraints":{"resourceRules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["widgets"]}]},
			"validations":[{"expression":"` + expr + `"}]}}`
	}
	r := do(t, ts, "POST", path, "", policy("object.spec.replicas > 1 && object.metadata.name != ''"))
	if r.code != http.StatusCreated {
		t.Fatalf("policy: %d %v", r.code, r.obj)
	}
	// status waits for the status controller to observe generation gen.
	status := func(gen string) map[string]any {
		t.Helper()
		var obj map[string]any
		testwait.UntilNil(t, 10*time.Second, "the status of generation "+gen, func() error {
			r := do(t, ts, "GET", path+"/p", "", "")
			if obj = r.obj; fmt.Sprint(at(obj, "status.observedGeneration")) != gen {
				return fmt.Errorf("policy %v", obj)
			}
			return nil
		})
		return obj
	}
	if got := status("1"); at(got, "status.typeChecking") == nil || at(got, "status.typeChecking.expressionWarnings") != nil {
		t.Errorf("a policy that checks: %v", got["status"])
	}
	if r := do(t, ts, "PUT", path+"/p", "", policy("object.spec.nope == 1")); r.code != http.StatusOK {
		t.Fatalf("update: %d %v", r.code, r.obj)
	}
	want := "example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'nope'\n | object.spec.nope == 1\n | ...........^\n"
	got := status("2")
	if at(got, "status.typeChecking.expressionWarnings.0.fieldRef") != "spec.validations[0].expression" || at(got, "status.typeChecking.expressionWarnings.0.warning") != want {
		t.Errorf("status %v, want the warning %q", got["status"], want)
	}
}
