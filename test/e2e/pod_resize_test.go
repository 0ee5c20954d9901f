package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

// TestPodResizeAuthorization: RBAC names the resize subresource, as
// kube's does: a user who may update pods may not resize them until a
// role grants update on pods/resize, and then resizes.
func TestPodResizeAuthorization(t *testing.T) {
	tokens := tokenFile(t, "admin-token,admin,1,system:masters", "carol-token,carol,2")
	s := startTLSServer(t, authntest.NewCA(t), "--token-auth-file", tokens)
	admin, carol := s.as(t, "admin-token"), s.as(t, "carol-token")
	const pods = "/api/v1/namespaces/default/pods"
	for _, c := range []struct{ path, body string }{
		{pods, `{"metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"nginx","resources":{"requests":{"cpu":"100m"}}}]}}`},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", `{"metadata":{"name":"pod-editor"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","update"]}]}`},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", `{"metadata":{"name":"pod-editor"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"pod-editor"},"subjects":[{"kind":"User","name":"carol"}]}`},
	} {
		if code, body := admin("POST", c.path, c.body); code != http.StatusCreated {
			t.Fatalf("admin POST %s: %d %s", c.path, code, body)
		}
	}
	code, pod := carol("GET", pods+"/web", "")
	if code != http.StatusOK {
		t.Fatalf("carol GET: %d %s", code, pod)
	}
	resized := strings.Replace(pod, `"cpu":"100m"`, `"cpu":"200m"`, 1)
	code, body := carol("PUT", pods+"/web/resize", resized)
	if want := `User \"carol\" cannot update resource \"pods/resize\" in API group \"\" in the namespace \"default\"`; code != http.StatusForbidden || !strings.Contains(body, want) {
		t.Errorf("carol resizes without pods/resize: %d %s, want 403 %q", code, body, want)
	}
	if code, body := admin("PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/pod-editor",
		`{"metadata":{"name":"pod-editor"},"rules":[{"apiGroups":[""],"resources":["pods","pods/resize"],"verbs":["get","update"]}]}`); code != http.StatusOK {
		t.Fatalf("admin grants pods/resize: %d %s", code, body)
	}
	if code, body := carol("PUT", pods+"/web/resize", resized); code != http.StatusOK || !strings.Contains(body, `"cpu":"200m"`) {
		t.Errorf("carol resizes with pods/resize: %d %s", code, body)
	}
}
