package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

// as makes requests to s with a bearer token ("" for none).
func (s *server) as(t *testing.T, token string) func(method, path, body string) (int, string) {
	return func(method, path, body string) (int, string) {
		t.Helper()
		code, b := s.bearer(t, token, method, path, body)
		return code, string(b)
	}
}

// kubectlRBAC: kubectl creates a role and a binding as the administrator,
// and, as alice, lists what the binding grants and prints kube's 403 for
// the rest.
func kubectlRBAC(t *testing.T, s *server) {
	kubectl := needKubectl(t)
	run := func(token string, args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), kubectl, append([]string{"--server", s.URL, "--certificate-authority", s.caFile, "--token", token}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{
		{"-n", "team-b", "create", "configmap", "b-settings"},
		{"-n", "team-b", "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps"},
		{"-n", "team-b", "create", "rolebinding", "bob-reads", "--role=cm-reader", "--user=bob"},
	} {
		if out, err := run("admin-token", args...); err != nil {
			t.Fatalf("kubectl %s as admin: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := run("bob-token", "-n", "team-b", "get", "configmaps"); err != nil || !strings.Contains(out, "b-settings") {
		t.Errorf("kubectl get configmaps as bob: %v\n%s", err, out)
	}
	want := `Error from server (Forbidden): configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "team-a"`
	if out, err := run("bob-token", "-n", "team-a", "get", "configmaps"); err == nil || !strings.Contains(out, want) {
		t.Errorf("kubectl get configmaps as bob in team-a: %v\n%s\nwant %s", err, out, want)
	}
}

// statusMessage is the message of a Status body.
func statusMessage(t *testing.T, body string) string {
	t.Helper()
	var st struct{ Message string }
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("not a Status: %s", body)
	}
	return st.Message
}

// TestRBAC drives RBAC through the binary on TLS with a token file, as an
// administrator (system:masters) sets it up and a user bound by a
// RoleBinding meets it: allowed in its namespace at once after the
// binding's response (read your writes), kube's 403 text elsewhere, no
// secrets, no binding to cluster-admin (escalation), a watch authorized
// when it starts; anonymous requests are RBAC's to decide, a bad token is
// 401; kubectl creates roles and bindings and prints kube's 403; the
// authorization metrics count the decisions.
func TestRBAC(t *testing.T) {
	tokens := tokenFile(t, "admin-token,admin,1,system:masters", "alice-token,alice,2", "bob-token,bob,3")
	s := startTLSServer(t, authntest.NewCA(t), "--token-auth-file", tokens)
	admin, alice, anon := s.as(t, "admin-token"), s.as(t, "alice-token"), s.as(t, "")
	const rbacV1 = "/apis/rbac.authorization.k8s.io/v1"
	setup := []struct{ path, body string }{
		{"/api/v1/namespaces", `{"metadata":{"name":"team-a"}}`},
		{"/api/v1/namespaces", `{"metadata":{"name":"team-b"}}`},
		{"/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"settings"}}`},
		{rbacV1 + "/namespaces/team-a/roles", `{"metadata":{"name":"cm-reader"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list","watch"]}]}`},
		{rbacV1 + "/clusterroles", `{"metadata":{"name":"binding-creator"},"rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterrolebindings"],"verbs":["create"]}]}`},
		{rbacV1 + "/clusterrolebindings", `{"metadata":{"name":"alice-binds"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"binding-creator"},"subjects":[{"kind":"User","name":"alice"}]}`},
		{rbacV1 + "/namespaces/team-a/rolebindings", `{"metadata":{"name":"alice-reads"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"cm-reader"},"subjects":[{"kind":"User","name":"alice"}]}`},
	}
	for _, c := range setup {
		if code, body := admin("POST", c.path, c.body); code != http.StatusCreated {
			t.Fatalf("admin POST %s: %d %s", c.path, code, body)
		}
	}
	// The policy's cluster-admin role may exist already.
	if code, body := admin("POST", rbacV1+"/clusterroles", `{"metadata":{"name":"cluster-admin"},"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]},{"nonResourceURLs":["*"],"verbs":["*"]}]}`); code != http.StatusCreated && code != http.StatusConflict {
		t.Fatalf("creating cluster-admin: %d %s", code, body)
	}

	if code, body := alice("GET", "/api/v1/namespaces/team-a/configmaps", ""); code != http.StatusOK || !strings.Contains(body, `"settings"`) {
		t.Errorf("alice lists configmaps in team-a: %d %s", code, body)
	}
	refusals := []struct {
		name, method, path, body, message string
	}{
		{"configmaps in another namespace", "GET", "/api/v1/namespaces/team-b/configmaps", "",
			`configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "team-b"`},
		{"secrets", "GET", "/api/v1/namespaces/team-a/secrets/token", "",
			`secrets "token" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "team-a"`},
		{"a write the role does not grant", "POST", "/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"x"}}`,
			`configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "team-a"`},
		{"a binding to cluster-admin", "POST", rbacV1 + "/clusterrolebindings", `{"metadata":{"name":"alice-admin"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"User","name":"alice"}]}`,
			`clusterrolebindings.rbac.authorization.k8s.io "alice-admin" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`},
	}
	for _, r := range refusals {
		code, body := alice(r.method, r.path, r.body)
		if code != http.StatusForbidden || !strings.HasPrefix(statusMessage(t, body), r.message) {
			t.Errorf("alice, %s: %d %s\nwant 403 %s", r.name, code, body, r.message)
		}
	}

	// A watch is authorized when it starts.
	resp := s.do(t, "alice-token", "GET", "/api/v1/namespaces/team-a/configmaps?watch=1", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's watch in team-a: %d", resp.StatusCode)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if err != nil || !strings.Contains(line, `"ADDED"`) || !strings.Contains(line, `"settings"`) {
		t.Errorf("alice's watch: first event %q, %v", line, err)
	}
	if code, body := alice("GET", "/api/v1/namespaces/team-b/configmaps?watch=1", ""); code != http.StatusForbidden ||
		statusMessage(t, body) != `configmaps is forbidden: User "alice" cannot watch resource "configmaps" in API group "" in the namespace "team-b"` {
		t.Errorf("alice's watch in team-b: %d %s", code, body)
	}

	// Without credentials a request is system:anonymous, for RBAC to
	// decide; a token no user holds is 401.
	if code, body := anon("GET", "/api/v1/namespaces/team-a/configmaps", ""); code != http.StatusForbidden ||
		statusMessage(t, body) != `configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "team-a"` {
		t.Errorf("anonymous: %d %s", code, body)
	}
	if code, body := s.as(t, "forged")("GET", "/api/v1/namespaces/team-a/configmaps", ""); code != http.StatusUnauthorized {
		t.Errorf("a bad token: %d %s, want 401", code, body)
	}
	if code, _ := anon("GET", "/readyz", ""); code != http.StatusOK {
		t.Errorf("anonymous /readyz: %d, want 200", code)
	}

	t.Run("kubectl", func(t *testing.T) { kubectlRBAC(t, s) })

	code, metrics := admin("GET", "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`apiserver_authorization_decisions_total{decision="allowed",name="rbac",type="RBAC"}`,
		`authorization_attempts_total{result="allowed"}`,
		`authorization_attempts_total{result="no-opinion"}`,
		`authentication_attempts{result="error"} 1`,
		`authentication_attempts{result="success"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	s.stop(t)
	if logs := s.logs.String(); !strings.Contains(logs, "authorization modes=RBAC anonymous=true") {
		t.Errorf("the log does not say which authorization runs:\n%s", logs)
	}
}

// TestControllerLeaseProtected: with RBAC on, the Lease that elects the
// server running the garbage collector and event expiry is kube-system's,
// as kube-controller-manager's: a user without a binding there can neither
// read, take, nor delete it (which would stop those controllers), and
// neither can an anonymous request; an administrator may.
func TestControllerLeaseProtected(t *testing.T) {
	tokens := tokenFile(t, "admin-token,admin,1,system:masters", "alice-token,alice,2")
	s := startTLSServer(t, authntest.NewCA(t), "--token-auth-file", tokens)
	const lease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/listwatch-controller-manager"
	taken := `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"listwatch-controller-manager","namespace":"kube-system"},"spec":{"holderIdentity":"mallory","leaseDurationSeconds":2147483647}}`
	for who, do := range map[string]func(method, path, body string) (int, string){"alice": s.as(t, "alice-token"), "anonymous": s.as(t, "")} {
		for _, req := range []struct{ method, body string }{{http.MethodGet, ""}, {http.MethodPut, taken}, {http.MethodDelete, ""}} {
			if code, body := do(req.method, lease, req.body); code != http.StatusForbidden {
				t.Errorf("%s %s the controller Lease as %s: %d, want 403\n%s", req.method, lease, who, code, body)
			}
		}
	}
	// The server may not have written it yet: 404 is an answer too.
	if code, body := s.as(t, "admin-token")(http.MethodGet, lease, ""); code != http.StatusOK && code != http.StatusNotFound {
		t.Errorf("GET the controller Lease as admin: %d\n%s", code, body)
	}
}
