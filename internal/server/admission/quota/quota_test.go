package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

func parse(t *testing.T, s string) api.Object {
	t.Helper()
	o, err := api.ParseObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestResources checks which resources' objects a quota's hard names
// are counted from; test/interop/admissionplugins proves the charges
// equal kube's.
func TestResources(t *testing.T) {
	hard := Read(parse(t, `{"hard": {"count/deployments.apps": "1", "pods": "1", "limits.cpu": "1", "requests.storage": "1",
		"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1", "configmaps": "1", "count/widgets.example.com": "1",
		"services.nodeports": "1"}}`), "hard")
	served := func(group, plural string) bool { return group != "example.com" }
	want := [][2]string{{"", "configmaps"}, {"", "persistentvolumeclaims"}, {"", "pods"}, {"", "services"}, {"apps", "deployments"}}
	if diff := cmp.Diff(want, Resources(hard, served)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestUsage checks what the recompute counts: pods matching the quota's
// scopes, a finished pod only in count/pods, zeros for what nothing uses.
func TestUsage(t *testing.T) {
	q := Parse(parse(t, `{"metadata": {"name": "q"}, "spec": {"scopes": ["NotTerminating"],
		"scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "DoesNotExist"}]}},
		"status": {"hard": {"pods": "9", "count/pods": "9", "requests.cpu": "9", "limits.memory": "9", "count/configmaps": "9"}}}`))
	pods := []api.Object{
		parse(t, `{"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}`),
		parse(t, `{"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "200m"}}}]}, "status": {"phase": "Failed"}}`),
		parse(t, `{"spec": {"activeDeadlineSeconds": 5, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}`),
		parse(t, `{"spec": {"priorityClassName": "high", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}`),
	}
	got, err := Usage(q, "", "pods", pods, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"pods": "1", "count/pods": "2", "requests.cpu": "100m", "limits.memory": "0"}; !cmp.Equal(want, Encode(got)) {
		t.Errorf("got %v, want %v", Encode(got), want)
	}
	// Scopes match no ConfigMap, as kube's MatchesNoScopeFunc.
	if got, _ := Usage(q, "", "configmaps", make([]api.Object, 3), time.Now()); Encode(got)["count/configmaps"] != "0" {
		t.Errorf("scoped configmaps counted: %v", Encode(got))
	}
	q.Scopes = nil
	if got, _ := Usage(q, "", "configmaps", make([]api.Object, 3), time.Now()); Encode(got)["count/configmaps"] != "3" {
		t.Errorf("configmaps: %v, want 3", Encode(got))
	}
}
