package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPolicyMetrics: checks of validating and mutating policies are
// counted as kube's dispatchers count them: a denial once per enforcement
// action (error_type invalid_error for a validation that does not hold,
// as kube's ErrorType reads its message), an error ignored under
// failurePolicy Ignore as "allow", a validation that holds not at all,
// each mutation with its error type.
func TestPolicyMetrics(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	const rules = `"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]}`
	for _, c := range []struct{ path, body string }{
		{admissionV1 + "/validatingadmissionpolicies", `{"metadata":{"name":"warned"},"spec":{` + rules + `,
			"validations":[{"expression":"false"},{"expression":"true"}]}}`},
		{admissionV1 + "/validatingadmissionpolicybindings", `{"metadata":{"name":"warned-b"},"spec":{"policyName":"warned","validationActions":["Warn","Audit"]}}`},
		{admissionV1 + "/validatingadmissionpolicies", `{"metadata":{"name":"ignored"},"spec":{"failurePolicy":"Ignore",` + rules + `,
			"validations":[{"expression":"object.nope == 1"}]}}`},
		{admissionV1 + "/validatingadmissionpolicybindings", `{"metadata":{"name":"ignored-b"},"spec":{"policyName":"ignored","validationActions":["Deny"]}}`},
		{mutatingPolicies, `{"metadata":{"name":"labels"},"spec":{"reinvocationPolicy":"Never",` + rules + `,
			"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {'m': 'y'}}}"}}]}}`},
		{mutatingBindings, `{"metadata":{"name":"labels-b"},"spec":{"policyName":"labels"}}`},
		{admissionV1 + "/validatingadmissionpolicies", `{"metadata":{"name":"denied"},"spec":{` + rules + `,
			"validations":[{"expression":"object.metadata.name != 'd'"}]}}`},
		{admissionV1 + "/validatingadmissionpolicybindings", `{"metadata":{"name":"denied-b"},"spec":{"policyName":"denied","validationActions":["Deny"]}}`},
	} {
		if code, m := call(t, ts, "POST", c.path, mediaJSON, c.body); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %v", c.path, code, m)
		}
	}
	code, cm := call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"c"}}`)
	if code != http.StatusCreated || at(cm, "metadata.labels.m") != "y" {
		t.Fatalf("create: %d %v", code, cm)
	}
	if code, st := call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"d"}}`); code != http.StatusUnprocessableEntity {
		t.Fatalf("create denied: %d %v", code, st)
	}
	rec := httptest.NewRecorder()
	s.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var got []string
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "apiserver_validating_admission_policy_check_total{") || strings.HasPrefix(line, "apiserver_mutating_admission_policy_check_total{") ||
			strings.HasPrefix(line, "apiserver_validating_admission_policy_check_duration_seconds_count{") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	want := []string{
		`apiserver_mutating_admission_policy_check_total{error_type="no_error",policy="labels",policy_binding="labels-b"} 2`,
		`apiserver_validating_admission_policy_check_duration_seconds_count{enforcement_action="allow",error_type="invalid_error",policy="ignored",policy_binding="ignored-b"} 2`,
		`apiserver_validating_admission_policy_check_duration_seconds_count{enforcement_action="audit",error_type="invalid_error",policy="warned",policy_binding="warned-b"} 2`,
		`apiserver_validating_admission_policy_check_duration_seconds_count{enforcement_action="deny",error_type="invalid_error",policy="denied",policy_binding="denied-b"} 1`,
		`apiserver_validating_admission_policy_check_duration_seconds_count{enforcement_action="warn",error_type="invalid_error",policy="warned",policy_binding="warned-b"} 2`,
		`apiserver_validating_admission_policy_check_total{enforcement_action="allow",error_type="invalid_error",policy="ignored",policy_binding="ignored-b"} 2`,
		`apiserver_validating_admission_policy_check_total{enforcement_action="audit",error_type="invalid_error",policy="warned",policy_binding="warned-b"} 2`,
		`apiserver_validating_admission_policy_check_total{enforcement_action="deny",error_type="invalid_error",policy="denied",policy_binding="denied-b"} 1`,
		`apiserver_validating_admission_policy_check_total{enforcement_action="warn",error_type="invalid_error",policy="warned",policy_binding="warned-b"} 2`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
