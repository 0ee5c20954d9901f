package interop

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestKubectlRBAC drives the four RBAC kinds as a user does with kubectl:
// the create subcommands, get (-o wide), describe, apply of real-world
// manifests (testdata/rbac/README.md says where each comes from), and an
// edit through replace; invalid objects get kube's messages.
func TestKubectlRBAC(t *testing.T) { eachKubectl(t, rbacScenario) }

func rbacScenario(t *testing.T, k kubectl) {
	const rbac = "/apis/rbac.authorization.k8s.io/v1"
	dir := t.TempDir()
	contains(t, k.must(t, "create", "clusterrole", "system:cm-reader", "--verb=get,list,watch", "--resource=configmaps,secrets"),
		`clusterrole.rbac.authorization.k8s.io/system:cm-reader created`)
	contains(t, k.must(t, "create", "clusterrole", "metrics", "--verb=get", "--non-resource-url=/metrics,/healthz/*"),
		`clusterrole.rbac.authorization.k8s.io/metrics created`)
	contains(t, k.must(t, "create", "clusterrole", "aggregate", "--aggregation-rule=rbac.example.com/aggregate-to-monitoring=true"),
		`clusterrole.rbac.authorization.k8s.io/aggregate created`)
	contains(t, k.must(t, "create", "role", "cm-reader", "--verb=get", "--resource=configmaps", "--resource-name=a", "--resource-name=b"),
		`role.rbac.authorization.k8s.io/cm-reader created`)
	contains(t, k.must(t, "create", "rolebinding", "read-cm", "--role=cm-reader", "--user=jane", "--group=devs", "--serviceaccount=kube-system:robot"),
		`rolebinding.rbac.authorization.k8s.io/read-cm created`)
	contains(t, k.must(t, "create", "clusterrolebinding", "viewers", "--clusterrole=view", "--user=alice", "--user=bob"),
		`clusterrolebinding.rbac.authorization.k8s.io/viewers created`)
	if _, obj := getObject(t, k.server, rbac+"/clusterroles/aggregate"); field(obj, "aggregationRule", "clusterRoleSelectors") == nil {
		t.Errorf("aggregation rule on the server: %v", obj)
	}

	contains(t, k.must(t, "get", "rolebindings", "-o", "wide"),
		`NAME\s+ROLE\s+AGE\s+USERS\s+GROUPS\s+SERVICEACCOUNTS\n`, `read-cm\s+Role/cm-reader\s+\d+s\s+jane\s+devs\s+kube-system/robot\n`)
	out := k.must(t, "get", "clusterrolebindings")
	contains(t, out, `NAME\s+ROLE\s+AGE\n`, `viewers\s+ClusterRole/view\s+\d+s\n`)
	if strings.Contains(out, "USERS") {
		t.Errorf("get without -o wide shows the wide columns:\n%s", out)
	}
	contains(t, k.must(t, "get", "clusterroles"), `NAME\s+CREATED AT\n`, `system:cm-reader\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n`)

	contains(t, k.must(t, "describe", "role", "cm-reader"), `Name:\s+cm-reader`, `PolicyRule:`,
		`configmaps\s+\[\]\s+\[a\]\s+\[get\]`, `configmaps\s+\[\]\s+\[b\]\s+\[get\]`)
	contains(t, k.must(t, "describe", "clusterrole", "metrics"), `\[/metrics\]\s+\[\]\s+\[get\]`, `\[/healthz/\*\]\s+\[\]\s+\[get\]`)
	contains(t, k.must(t, "describe", "rolebinding", "read-cm"), `Role:\n\s+Kind:\s+Role\n\s+Name:\s+cm-reader`,
		`User\s+jane`, `Group\s+devs`, `ServiceAccount\s+robot\s+kube-system`)

	manifests, err := filepath.Glob("testdata/rbac/*.yaml")
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	for _, m := range manifests {
		contains(t, k.must(t, "apply", "-f", m), `created`)
		contains(t, k.must(t, "apply", "-f", m), `unchanged`)
	}
	if _, obj := getObject(t, k.server, rbac+"/clusterrolebindings/kubelet-node"); field(obj, "roleRef", "name") != "system:node" {
		t.Errorf("kubemark's binding on the server: %v", obj)
	}
	contains(t, k.must(t, "get", "clusterrolebinding", "csi-attacher-role", "-o", "wide"),
		`csi-attacher-role\s+ClusterRole/external-attacher-runner\s+\d+s\s+default/csi-attacher\n`)

	// An edit: the role as kubectl reads it, a verb added, written back whole.
	role := k.must(t, "get", "role", "cm-reader", "-o", "yaml")
	edited := strings.Replace(role, "- get\n", "- get\n  - list\n", 1)
	if edited == role {
		t.Fatalf("no verbs in\n%s", role)
	}
	contains(t, k.must(t, "replace", "-f", writeFile(t, dir, "role.yaml", edited)), `role.rbac.authorization.k8s.io/cm-reader replaced`)
	if _, obj := getObject(t, k.server, rbac+"/namespaces/default/roles/cm-reader"); len(field(obj, "rules").([]any)) != 1 ||
		strings.Join(toStrings(field(obj, "rules").([]any)[0].(map[string]any)["verbs"]), ",") != "get,list" {
		t.Errorf("replaced role on the server: %v", obj)
	}
	binding := k.must(t, "get", "rolebinding", "read-cm", "-o", "yaml")
	out, err = k.run(t, nil, "replace", "-f", writeFile(t, dir, "binding.yaml", strings.Replace(binding, "name: cm-reader", "name: other", 1)))
	if err == nil {
		t.Fatalf("a binding's roleRef changed:\n%s", out)
	}
	contains(t, out, `The RoleBinding "read-cm" is invalid: roleRef: Invalid value: \{"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"\}: field is immutable`)

	bad := writeFile(t, dir, "bad.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: bad}\nrules:\n- apiGroups: ['']\n  resources: [configmaps]\n  nonResourceURLs: [/metrics]\n")
	// --validate=false: Debian's kubectl checks required fields itself.
	out, err = k.run(t, nil, "create", "--validate=false", "-f", bad)
	if err == nil {
		t.Fatalf("an invalid role was created:\n%s", out)
	}
	contains(t, out, `The Role "bad" is invalid`, `rules\[0\]\.verbs: Required value: verbs must contain at least one value`,
		`rules\[0\]\.nonResourceURLs: Invalid value: \["/metrics"\]: namespaced rules cannot apply to non-resource URLs`,
		`rules\[0\]\.nonResourceURLs: Invalid value: \["/metrics"\]: rules cannot apply to both regular resources and non-resource URLs`)

	// auth reconcile adds what a manifest grants that the server lacks.
	reconciled := writeFile(t, dir, "reconcile.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: cm-reader, namespace: default}\n"+
		"rules:\n- {apiGroups: [''], resources: [secrets], verbs: [list]}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reconciled}\n"+
		"rules:\n- {nonResourceURLs: [/version], verbs: [get]}\n")
	contains(t, k.must(t, "auth", "reconcile", "-f", reconciled), `role.rbac.authorization.k8s.io/cm-reader reconciled`, `clusterrole.rbac.authorization.k8s.io/reconciled reconciled`)
	if _, obj := getObject(t, k.server, rbac+"/namespaces/default/roles/cm-reader"); len(field(obj, "rules").([]any)) != 2 {
		t.Errorf("reconciled role on the server: %v", obj["rules"])
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
