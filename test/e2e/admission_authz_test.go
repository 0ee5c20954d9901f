package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

// TestPolicyAuthorizer: a ValidatingAdmissionPolicy asks the RBAC
// authorizer, through kube's authorizer variables, whether the requesting
// user may "update configmaps/approval": alice, bound to a Role granting
// it, may create an approved ConfigMap, bob may not; both may create
// others. A messageExpression may not use the authorizer, as kube's.
func TestPolicyAuthorizer(t *testing.T) {
	tokens := tokenFile(t, "admin-token,admin,1,system:masters", "alice-token,alice,2", "bob-token,bob,3")
	s := startTLSServer(t, authntest.NewCA(t), "--token-auth-file", tokens)
	admin, alice, bob := s.as(t, "admin-token"), s.as(t, "alice-token"), s.as(t, "bob-token")
	const (
		rbacV1   = "/apis/rbac.authorization.k8s.io/v1"
		policies = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
		cms      = "/api/v1/namespaces/team/configmaps"
	)
	policy := func(name, validation string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{"failurePolicy":"Fail",
			"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
			"validations":[` + validation + `]}}`
	}
	for _, c := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"metadata":{"name":"team"}}`},
		{rbacV1 + "/namespaces/team/roles", `{"metadata":{"name":"writer"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["create"]}]}`},
		{rbacV1 + "/namespaces/team/roles", `{"metadata":{"name":"approver"},"rules":[{"apiGroups":[""],"resources":["configmaps/approval"],"verbs":["update"]}]}`},
		{rbacV1 + "/namespaces/team/rolebindings", `{"metadata":{"name":"writers"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"writer"},
			"subjects":[{"kind":"User","name":"alice"},{"kind":"User","name":"bob"}]}`},
		{rbacV1 + "/namespaces/team/rolebindings", `{"metadata":{"name":"approvers"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"approver"},
			"subjects":[{"kind":"User","name":"alice"}]}`},
		{policies, policy("approval", `{"expression":"object.?data.approved.orValue('') != 'yes' || authorizer.group('').resource('configmaps').subresource('approval').namespace(request.namespace).check('update').allowed()",
			"message":"only approvers may approve"},
			{"expression":"authorizer.requestResource.check('create').allowed()","message":"the request's own resource"}`)},
		{"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", `{"metadata":{"name":"approval"},"spec":{"policyName":"approval","validationActions":["Deny"]}}`},
	} {
		if code, body := admin("POST", c.path, c.body); code != http.StatusCreated {
			t.Fatalf("admin POST %s: %d %s", c.path, code, body)
		}
	}

	approved := `{"metadata":{"name":"NAME"},"data":{"approved":"yes"}}`
	if code, body := alice("POST", cms, strings.Replace(approved, "NAME", "by-alice", 1)); code != http.StatusCreated {
		t.Errorf("alice, an approver: %d %s", code, body)
	}
	code, body := bob("POST", cms, strings.Replace(approved, "NAME", "by-bob", 1))
	if want := `ValidatingAdmissionPolicy 'approval' with binding 'approval' denied request: only approvers may approve`; code != http.StatusUnprocessableEntity || !strings.Contains(body, want) {
		t.Errorf("bob, no approver: %d %s, want 422 %q", code, body, want)
	}
	if code, body := bob("POST", cms, `{"metadata":{"name":"plain"}}`); code != http.StatusCreated {
		t.Errorf("bob, not approving: %d %s", code, body)
	}

	code, body = admin("POST", policies, policy("message", `{"expression":"true","messageExpression":"authorizer.path('/').check('get').reason()"}`))
	if want := `undeclared reference to 'authorizer'`; code != http.StatusUnprocessableEntity || !strings.Contains(body, want) {
		t.Errorf("a messageExpression using the authorizer: %d %s, want 422 %q", code, body, want)
	}
}
