package rbac

import (
	"context"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authz"
)

// TestAuthorize follows the semantics kube documents for RBAC
// (https://kubernetes.io/docs/reference/access-authn-authz/rbac/) and
// tests in plugin/pkg/auth/authorizer/rbac/rbac_test.go (TestAuthorizer,
// TestRuleMatches) and pkg/registry/rbac/validation/rule_test.go
// (TestAppliesTo).
func TestAuthorize(t *testing.T) {
	f := newFixture(t,
		role("", "pod-reader", grant(s("get", "list", "watch"), s(""), s("pods"))),
		role("", "everything", grant(s("*"), s("*"), s("*")), urlGrant(s("*"), "*")),
		role("", "status-writer", grant(s("update"), s(""), s("pods/status"))),
		role("", "scaler", grant(s("update"), s("*"), s("*/scale"))),
		role("", "health", urlGrant(s("get"), "/healthz", "/apis/*")),
		role("", "named", grant(s("get"), s(""), s("configmaps"), "cm1")),
		role("ns1", "deployer", grant(s("create"), s("apps"), s("deployments"))),
		bind("", "crb-pods", "ClusterRole", "pod-reader", subj("User", "alice")),
		bind("ns1", "rb-everything", "ClusterRole", "everything", subj("User", "bob")),
		bind("", "crb-group", "ClusterRole", "status-writer", subj("Group", "writers")),
		bind("ns1", "rb-sa", "ClusterRole", "scaler", subj("ServiceAccount", "robot")),
		bind("", "crb-sa-no-ns", "ClusterRole", "scaler", subj("ServiceAccount", "drone")),
		bind("", "crb-sa", "ClusterRole", "health", subj("ServiceAccount", "probe", "ns2")),
		bind("", "crb-named", "ClusterRole", "named", subj("User", "carol")),
		bind("ns1", "rb-role", "Role", "deployer", subj("User", "dave")),
		bind("ns2", "rb-role-elsewhere", "Role", "deployer", subj("User", "dave")),
	)
	z := NewAuthorizer(f.view)
	alice, bob, carol, dave := user("alice"), user("bob"), user("carol"), user("dave")
	tests := []struct {
		name  string
		a     authz.Attributes
		allow bool
	}{
		// A ClusterRoleBinding grants in every namespace and cluster-wide.
		{"clusterrolebinding in a namespace", res(alice, "list", "", "pods", "ns9", ""), true},
		{"clusterrolebinding cluster-wide", res(alice, "watch", "", "pods", "", ""), true},
		{"verb not in the rule", res(alice, "delete", "", "pods", "ns9", "p"), false},
		{"group not in the rule", res(alice, "get", "apps", "pods", "ns9", "p"), false},
		{"resource not in the rule", res(alice, "get", "", "secrets", "ns9", "s"), false},
		{"a resource's rule does not cover its subresource", res(alice, "get", "", "pods/log", "ns9", "p"), false},
		// A RoleBinding to a ClusterRole grants in its namespace only.
		{"rolebinding to a clusterrole in its namespace", res(bob, "delete", "", "secrets", "ns1", "s"), true},
		{"rolebinding to a clusterrole elsewhere", res(bob, "get", "", "secrets", "ns2", "s"), false},
		{"rolebinding to a clusterrole cluster-wide", res(bob, "list", "", "secrets", "", ""), false},
		{"rolebinding grants no non-resource URL", path(bob, "get", "/metrics"), false},
		// Groups.
		{"group subject", res(user("erin", "writers"), "update", "", "pods/status", "ns3", "p"), true},
		{"pods/status does not cover pods", res(user("erin", "writers"), "update", "", "pods", "ns3", "p"), false},
		{"user name is not a group", res(user("writers"), "update", "", "pods/status", "ns3", "p"), false},
		// "*/scale" matches any resource's scale subresource, nothing else.
		{"*/scale by a service account in the binding's namespace", res(user("system:serviceaccount:ns1:robot"), "update", "apps", "deployments/scale", "ns1", "d"), true},
		{"*/scale is not the resource", res(user("system:serviceaccount:ns1:robot"), "update", "apps", "deployments", "ns1", "d"), false},
		{"service account of another namespace", res(user("system:serviceaccount:ns2:robot"), "update", "apps", "deployments/scale", "ns1", "d"), false},
		{"service account without a namespace in a clusterrolebinding", res(user("system:serviceaccount:ns1:drone"), "update", "apps", "deployments/scale", "ns1", "d"), false},
		// Non-resource URLs: exact, or a prefix ending in "*".
		{"exact URL", path(user("system:serviceaccount:ns2:probe"), "get", "/healthz"), true},
		{"URL with a suffix", path(user("system:serviceaccount:ns2:probe"), "get", "/healthz/ping"), false},
		{"URL prefix", path(user("system:serviceaccount:ns2:probe"), "get", "/apis/apps/v1"), true},
		{"URL verb", path(user("system:serviceaccount:ns2:probe"), "post", "/healthz"), false},
		// resourceNames.
		{"named resource", res(carol, "get", "", "configmaps", "ns1", "cm1"), true},
		{"other name", res(carol, "get", "", "configmaps", "ns1", "cm2"), false},
		{"list has no name", res(carol, "list", "", "configmaps", "ns1", ""), false},
		// A Role is looked up in the binding's namespace.
		{"role in its namespace", res(dave, "create", "apps", "deployments", "ns1", ""), true},
		{"binding to a role that does not exist", res(dave, "create", "apps", "deployments", "ns2", ""), false},
		{"unbound user", res(user("mallory"), "get", "", "pods", "ns1", "p"), false},
		{"unbound user's URL", path(user("mallory"), "get", "/healthz"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := decide(t, z, tt.a); got != tt.allow {
				t.Fatalf("allowed %v, want %v", got, tt.allow)
			}
		})
	}
}

// TestMissingRoleReason: a binding to a role that does not exist grants
// nothing and the denial says why, in the words of kube's listers
// (rbac.go's reason "RBAC: " and an aggregate of the errors).
func TestMissingRoleReason(t *testing.T) {
	f := newFixture(t,
		bind("ns1", "rb", "Role", "gone", subj("User", "dave")),
		bind("", "crb", "ClusterRole", "absent", subj("Group", "g")),
	)
	z := NewAuthorizer(f.view)
	_, reason := decide(t, z, res(user("dave"), "get", "", "pods", "ns1", "p"))
	if want := `RBAC: role.rbac.authorization.k8s.io "gone" not found`; reason != want {
		t.Errorf("one missing role: reason %q, want %q", reason, want)
	}
	_, reason = decide(t, z, res(user("dave", "g"), "get", "", "pods", "ns1", "p"))
	if want := `RBAC: [clusterrole.rbac.authorization.k8s.io "absent" not found, role.rbac.authorization.k8s.io "gone" not found]`; reason != want {
		t.Errorf("two missing roles: reason %q, want %q", reason, want)
	}
	_, reason = decide(t, z, res(user("erin"), "get", "", "pods", "ns1", "p"))
	if reason != "" {
		t.Errorf("unbound user: reason %q, want none", reason)
	}
}

// TestAllowedReason: an allowed request's reason names the binding, its
// role and the first of its subjects the user is, in kube's words
// (rule.go's describers), as audit logs and SubjectAccessReviews show it.
func TestAllowedReason(t *testing.T) {
	f := newFixture(t,
		role("", "reader", grant(s("get"), s(""), s("pods"))),
		role("ns1", "local", grant(s("list"), s(""), s("pods"))),
		bind("", "readers", "ClusterRole", "reader", subj("User", "nobody"), subj("Group", "devs"), subj("User", "alice")),
		bind("ns1", "locals", "Role", "local", subj("ServiceAccount", "robot"), subj("ServiceAccount", "other", "ns2")),
	)
	z := NewAuthorizer(f.view)
	for _, tt := range []struct {
		a    authz.Attributes
		want string
	}{
		{res(user("alice"), "get", "", "pods", "ns1", "p"), `RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "reader" to User "alice"`},
		// The first subject that applies, in the binding's order.
		{res(user("alice", "devs"), "get", "", "pods", "ns1", "p"), `RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "reader" to Group "devs"`},
		{res(user("system:serviceaccount:ns1:robot"), "list", "", "pods", "ns1", ""), `RBAC: allowed by RoleBinding "locals/ns1" of Role "local" to ServiceAccount "robot/ns1"`},
		{res(user("system:serviceaccount:ns2:other"), "list", "", "pods", "ns1", ""), `RBAC: allowed by RoleBinding "locals/ns1" of Role "local" to ServiceAccount "other/ns2"`},
	} {
		if allowed, reason := decide(t, z, tt.a); !allowed || reason != tt.want {
			t.Errorf("%s %s: allowed %v, reason %q, want %q", tt.a.User.Name, tt.a.Verb, allowed, reason, tt.want)
		}
	}
}

// TestPrivileged: system:masters may do anything, as kube's privileged
// group authorizer, which runs before RBAC.
func TestPrivileged(t *testing.T) {
	z := authz.Union{Privileged{}, NewAuthorizer(newFixture(t).view)}
	if ok, _ := decide(t, z, res(user("root", "system:masters"), "delete", "", "secrets", "kube-system", "s")); !ok {
		t.Error("system:masters was not allowed")
	}
	if ok, _ := decide(t, z, res(user("system:masters"), "delete", "", "secrets", "kube-system", "s")); ok {
		t.Error("a user named system:masters was allowed")
	}
}

// TestViewFollowsChanges: a binding or role written (through this server,
// then Refresh) or deleted takes effect at the next request, and a
// binding no longer names its old subjects.
func TestViewFollowsChanges(t *testing.T) {
	f := newFixture(t, role("ns1", "r", grant(s("get"), s(""), s("pods"))))
	z := NewAuthorizer(f.view)
	get := res(user("alice"), "get", "", "pods", "ns1", "p")
	if ok, _ := decide(t, z, get); ok {
		t.Fatal("allowed before any binding")
	}
	refresh := func(o map[string]any) {
		t.Helper()
		r := f.put(o)
		md := o["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		if err := f.view.Refresh(context.Background(), r, ns, md["name"].(string)); err != nil {
			t.Fatal(err)
		}
	}
	refresh(bind("ns1", "b", "Role", "r", subj("User", "alice")))
	if ok, _ := decide(t, z, get); !ok {
		t.Fatal("not allowed right after the binding's Refresh")
	}
	refresh(bind("ns1", "b", "Role", "r", subj("User", "bob")))
	if ok, _ := decide(t, z, get); ok {
		t.Fatal("allowed after the binding moved to another subject")
	}
	if ok, _ := decide(t, z, res(user("bob"), "get", "", "pods", "ns1", "p")); !ok {
		t.Fatal("the binding's new subject was not allowed")
	}
	refresh(role("ns1", "r", grant(s("list"), s(""), s("pods"))))
	if ok, _ := decide(t, z, res(user("bob"), "get", "", "pods", "ns1", "p")); ok {
		t.Fatal("a rule taken out of the role still allowed")
	}
	r := f.resources["RoleBinding"]
	kv, err := f.store.Get(context.Background(), r.Key("ns1", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.store.Delete(context.Background(), kv.Key, kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	if err := f.view.Refresh(context.Background(), r, "ns1", "b"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := decide(t, z, res(user("bob"), "list", "", "pods", "ns1", "")); ok {
		t.Fatal("allowed after the binding's deletion")
	}
	f.view.mu.RLock()
	defer f.view.mu.RUnlock()
	if len(f.view.bySubject) != 0 || len(f.view.bindings) != 0 {
		t.Fatalf("the index keeps a deleted binding: %v %v", f.view.bySubject, f.view.bindings)
	}
}

// TestRulesFor lists a user's rules in a namespace, cluster-wide ones
// included, each binding once though it names the user twice.
func TestRulesFor(t *testing.T) {
	f := newFixture(t,
		role("", "cr", grant(s("get"), s(""), s("nodes"))),
		role("ns1", "r", grant(s("list"), s(""), s("pods"))),
		bind("", "crb", "ClusterRole", "cr", subj("User", "alice"), subj("Group", "g")),
		bind("ns1", "rb", "Role", "r", subj("Group", "g")),
	)
	z := NewAuthorizer(f.view)
	rules, err := z.RulesFor(context.Background(), user("alice", "g"), "ns1")
	if err != nil || len(rules) != 2 {
		t.Fatalf("ns1: %v %v, want the two rules", rules, err)
	}
	rules, err = z.RulesFor(context.Background(), user("alice", "g"), "")
	if err != nil || len(rules) != 1 || rules[0].Resources[0] != "nodes" {
		t.Fatalf("cluster-wide: %v %v, want the clusterrole's rule", rules, err)
	}
}
