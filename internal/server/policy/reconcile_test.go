package policy

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

func object(t *testing.T, s string) api.Object {
	t.Helper()
	obj, err := api.ParseObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestReconciled follows kube's computeReconciledRole and
// computeReconciledRoleBinding with nothing removed.
func TestReconciled(t *testing.T) {
	const role = `{"kind":"ClusterRole","metadata":{"name":"r","resourceVersion":"7"%s}%s}`
	const binding = `{"kind":"ClusterRoleBinding","metadata":{"name":"b","uid":"u1"%s},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"%s"},"subjects":%s}`
	sel := func(k string) string { return `{"matchLabels":{"` + k + `":"true"}}` }
	tests := []struct {
		name, cur, want, next string
		err                   error
	}{{
		name: "labels and annotations added, the stored values win",
		cur:  fmt.Sprintf(role, `,"labels":{"a":"user","u":"1"}`, `,"rules":null`),
		want: fmt.Sprintf(role, `,"labels":{"a":"kube","b":"kube"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"}`, `,"rules":null`),
		next: `{"kind":"ClusterRole","metadata":{"name":"r","labels":{"a":"user","b":"kube","u":"1"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"}},"rules":null}`,
	}, {
		name: "rules covered by a wider one: nothing to do",
		cur:  fmt.Sprintf(role, "", `,"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["get"]}]`),
		want: fmt.Sprintf(role, "", `,"rules":[{"apiGroups":[""],"resources":["pods","secrets"],"verbs":["get"]}]`),
		err:  errUnchanged,
	}, {
		name: "missing rules appended broken down",
		cur:  fmt.Sprintf(role, "", `,"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]`),
		want: fmt.Sprintf(role, "", `,"rules":[{"apiGroups":[""],"resources":["pods","secrets"],"verbs":["get","list"]}]`),
		next: `{"kind":"ClusterRole","metadata":{"name":"r"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]},{"apiGroups":[""],"resources":["pods"],"verbs":["list"]},{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]},{"apiGroups":[""],"resources":["secrets"],"verbs":["list"]}]}`,
	}, {
		name: "protected",
		cur:  fmt.Sprintf(role, `,"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"false"}`, `,"rules":[]`),
		want: fmt.Sprintf(role, "", `,"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]`),
		err:  errUnchanged,
	}, {
		name: "a selector added, the user's kept",
		cur:  fmt.Sprintf(role, "", `,"aggregationRule":{"clusterRoleSelectors":[`+sel("mine")+`]},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]`),
		want: fmt.Sprintf(role, "", `,"aggregationRule":{"clusterRoleSelectors":[`+sel("kube")+`]},"rules":null`),
		next: `{"kind":"ClusterRole","metadata":{"name":"r"},"aggregationRule":{"clusterRoleSelectors":[` + sel("mine") + `,` + sel("kube") + `]},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]}`,
	}, {
		name: "an aggregationRule kube does not have is removed",
		cur:  fmt.Sprintf(role, "", `,"aggregationRule":{"clusterRoleSelectors":[`+sel("mine")+`]},"rules":null`),
		want: fmt.Sprintf(role, "", `,"rules":null`),
		next: `{"kind":"ClusterRole","metadata":{"name":"r"},"rules":null}`,
	}, {
		name: "subjects appended once",
		cur:  fmt.Sprintf(binding, "", "r", `[{"kind":"User","name":"alice"}]`),
		want: fmt.Sprintf(binding, "", "r", `[{"kind":"Group","name":"g"},{"kind":"User","name":"alice"},{"kind":"Group","name":"g"}]`),
		next: fmt.Sprintf(binding, "", "r", `[{"kind":"User","name":"alice"},{"kind":"Group","name":"g"}]`),
	}, {
		name: "another roleRef: recreate",
		cur:  fmt.Sprintf(binding, "", "other", `[]`),
		want: fmt.Sprintf(binding, "", "r", `[]`),
		err:  recreate{uid: "u1"},
	}, {
		name: "another roleRef, protected",
		cur:  fmt.Sprintf(binding, `,"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"false"}`, "other", `[]`),
		want: fmt.Sprintf(binding, "", "r", `[]`),
		err:  errUnchanged,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := object(t, tc.cur)
			before := cur.DeepCopy()
			next, err := reconciled(cur, object(t, tc.want), slog.New(slog.DiscardHandler))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(object(t, tc.next), next); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, cur); diff != "" {
				t.Errorf("cur changed (-before +after):\n%s", diff)
			}
		})
	}
}
