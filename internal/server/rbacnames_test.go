package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestRBACNames: RBAC objects are named by kube's path segment rule
// ("system:basic-user"), not as DNS subdomains.
func TestRBACNames(t *testing.T) {
	ts := newTestServer(t)
	for name, want := range map[string]string{
		"system:x:Y_z": "",
		"a%b":          `metadata.name: Invalid value: "a%b": may not contain '%'`,
		"..":           `metadata.name: Invalid value: "..": may not be '..'`,
	} {
		code, obj := call(t, ts, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", mediaJSON, `{"metadata":{"name":"`+name+`"}}`)
		switch {
		case want == "" && code != http.StatusCreated:
			t.Errorf("%q: %d %v", name, code, obj)
		case want != "" && (code != http.StatusUnprocessableEntity || !strings.Contains(obj["message"].(string), want)):
			t.Errorf("%q: %d %v, want 422 %s", name, code, obj, want)
		}
	}
}
