package rbac

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// TestEscalation is the matrix of kube's escalation prevention
// (pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/
// policybased, pkg/registry/rbac/escalation_check.go and
// validation.ConfirmNoEscalation; documented at
// https://kubernetes.io/docs/reference/access-authn-authz/rbac/#privilege-escalation-prevention-and-bootstrapping).
func TestEscalation(t *testing.T) {
	f := newFixture(t,
		role("ns1", "pods", grant(s("get", "list"), s(""), s("pods"))),
		role("ns1", "secrets", grant(s("get"), s(""), s("secrets"))),
		role("", "cr-pods", grant(s("get", "list"), s(""), s("pods"))),
		role("", "cr-secrets", grant(s("get"), s(""), s("secrets"))),
		role("", "role-writer", grant(s("create", "update"), s(Group), s("roles", "clusterroles", "rolebindings", "clusterrolebindings"))),
		role("", "escalator", grant(s("escalate"), s(Group), s("roles"))),
		role("", "binder", grant(s("bind"), s(Group), s("clusterroles"), "cr-secrets")),
		// alice holds pods in ns1 through a Role.
		bind("ns1", "alice-pods", "Role", "pods", subj("User", "alice")),
		// bob holds cr-pods in ns1 through a RoleBinding to a ClusterRole.
		bind("ns1", "bob-pods", "ClusterRole", "cr-pods", subj("User", "bob")),
		// carol holds cr-pods cluster-wide.
		bind("", "carol-pods", "ClusterRole", "cr-pods", subj("User", "carol")),
		bind("ns1", "erin-escalate", "ClusterRole", "escalator", subj("User", "erin")),
		bind("ns1", "frank-bind", "ClusterRole", "binder", subj("User", "frank")),
		bind("", "writers", "ClusterRole", "role-writer", subj("Group", "system:authenticated")),
	)
	z := NewAuthorizer(f.view)
	g := NewGuard(f.view, z)
	u := func(name string, groups ...string) *authn.User {
		return user(name, append(groups, "system:authenticated")...)
	}
	tests := []struct {
		name    string
		user    *authn.User
		a       authz.Attributes // user, verb and resource; obj's namespace and name
		obj     map[string]any
		old     map[string]any
		code    int32  // 0 when allowed
		message string // when refused
	}{
		{"role with rules held", u("alice"), create("roles", "ns1"), role("ns1", "r", grant(s("get"), s(""), s("pods"))), nil, 0, ""},
		{"role with rules held, verbs of two rules", u("alice"), create("roles", "ns1"), role("ns1", "r", grant(s("list", "get"), s(""), s("pods"))), nil, 0, ""},
		{"role with rules not held", u("alice"), create("roles", "ns1"), role("ns1", "r", grant(s("get", "list"), s(""), s("secrets")), grant(s("delete"), s(""), s("pods"))), nil, 403,
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}` + "\n" + `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`},
		{"role in a namespace the rules are not held in", u("alice"), create("roles", "ns2"), role("ns2", "r", grant(s("get"), s(""), s("pods"))), nil, 403, ""},
		{"role with a named rule inside a held one", u("alice"), create("roles", "ns1"), role("ns1", "r", grant(s("get"), s(""), s("pods"), "p1")), nil, 0, ""},
		{"role with a subresource of a held resource", u("alice"), create("roles", "ns1"), role("ns1", "r", grant(s("get"), s(""), s("pods/log"))), nil, 403, ""},
		{"role through a RoleBinding to a ClusterRole", u("bob"), create("roles", "ns1"), role("ns1", "r", grant(s("list"), s(""), s("pods"))), nil, 0, ""},
		{"clusterrole with rules held in one namespace only", u("bob"), create("clusterroles", ""), role("", "c", grant(s("list"), s(""), s("pods"))), nil, 403,
			`clusterroles.rbac.authorization.k8s.io "c" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["pods"], Verbs:["list"]}`},
		{"clusterrole with rules held cluster-wide", u("carol"), create("clusterroles", ""), role("", "c", grant(s("list"), s(""), s("pods"))), nil, 0, ""},
		{"clusterrole aggregating", u("carol"), create("clusterroles", ""), aggregated(role("", "c")), nil, 403,
			`clusterroles.rbac.authorization.k8s.io "c" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{"update dropping an aggregation rule", u("carol"), update("clusterroles", "", "c"), role("", "c"), aggregated(role("", "c")), 403, ""},
		{"escalate verb", u("erin"), create("roles", "ns1"), role("ns1", "r", grant(s("*"), s("*"), s("*"))), nil, 0, ""},
		{"escalate verb in another namespace", u("erin"), create("roles", "ns2"), role("ns2", "r", grant(s("*"), s("*"), s("*"))), nil, 403, ""},
		{"system:masters", user("root", "system:masters"), create("clusterroles", ""), aggregated(role("", "c", grant(s("*"), s("*"), s("*")))), nil, 0, ""},
		{"update changing only finalizers", u("alice"), update("roles", "ns1", "secrets"), finalized(role("ns1", "secrets", grant(s("get"), s(""), s("secrets")))), role("ns1", "secrets", grant(s("get"), s(""), s("secrets"))), 0, ""},
		{"update adding a rule not held", u("alice"), update("roles", "ns1", "pods"), role("ns1", "pods", grant(s("get", "list"), s(""), s("pods")), grant(s("get"), s(""), s("secrets"))), role("ns1", "pods", grant(s("get", "list"), s(""), s("pods"))), 403, ""},

		{"rolebinding to a role held", u("alice"), create("rolebindings", "ns1"), bind("ns1", "b", "Role", "pods", subj("User", "zed")), nil, 0, ""},
		{"rolebinding to a role not held", u("alice"), create("rolebindings", "ns1"), bind("ns1", "b", "Role", "secrets", subj("User", "zed")), nil, 403,
			`rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{"rolebinding to a clusterrole held in the namespace", u("bob"), create("rolebindings", "ns1"), bind("ns1", "b", "ClusterRole", "cr-pods", subj("User", "zed")), nil, 0, ""},
		{"clusterrolebinding to a clusterrole held in one namespace", u("bob"), create("clusterrolebindings", ""), bind("", "b", "ClusterRole", "cr-pods", subj("User", "zed")), nil, 403,
			`clusterrolebindings.rbac.authorization.k8s.io "b" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{"clusterrolebinding to a clusterrole held cluster-wide", u("carol"), create("clusterrolebindings", ""), bind("", "b", "ClusterRole", "cr-pods", subj("User", "zed")), nil, 0, ""},
		{"bind verb on the role's name", u("frank"), create("rolebindings", "ns1"), bind("ns1", "b", "ClusterRole", "cr-secrets", subj("User", "zed")), nil, 0, ""},
		{"bind verb on another name", u("frank"), create("rolebindings", "ns1"), bind("ns1", "b", "ClusterRole", "cr-pods", subj("User", "zed")), nil, 403, ""},
		{"bind verb in another namespace", u("frank"), create("rolebindings", "ns2"), bind("ns2", "b", "ClusterRole", "cr-secrets", subj("User", "zed")), nil, 403, ""},
		{"binding to a missing role", u("alice"), create("rolebindings", "ns1"), bind("ns1", "b", "Role", "nope", subj("User", "zed")), nil, 404,
			`roles.rbac.authorization.k8s.io "nope" not found`},
		{"system:masters binds anything, a missing role too", user("root", "system:masters"), create("clusterrolebindings", ""), bind("", "b", "ClusterRole", "nope", subj("User", "zed")), nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			a.User = tt.user
			var old api.Object
			if tt.old != nil {
				old = api.Object(tt.old)
			}
			err := g.CheckWrite(context.Background(), a, api.Object(tt.obj), old)
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *api.StatusError
			if !errors.As(err, &se) || se.Status.Code != tt.code {
				t.Fatalf("got %v, want a %d Status", err, tt.code)
			}
			if tt.message != "" && se.Status.Message != tt.message {
				t.Fatalf("message\n%s\nwant\n%s", se.Status.Message, tt.message)
			}
		})
	}
}

func create(resource, ns string) authz.Attributes {
	return authz.Attributes{Verb: "create", ResourceRequest: true, APIGroup: Group, APIVersion: "v1", Resource: resource, Namespace: ns}
}

func update(resource, ns, name string) authz.Attributes {
	a := create(resource, ns)
	a.Verb, a.Name = "update", name
	return a
}

func aggregated(o map[string]any) map[string]any {
	o["aggregationRule"] = map[string]any{"clusterRoleSelectors": []any{map[string]any{"matchLabels": map[string]any{"a": "b"}}}}
	return o
}

func finalized(o map[string]any) map[string]any {
	o["metadata"].(map[string]any)["finalizers"] = []any{"example.com/keep"}
	return o
}

// TestEscalationBounded: a role granting more combinations than an
// escalation check compares is refused at once (kube would expand them
// all); one at the limit is checked.
func TestEscalationBounded(t *testing.T) {
	words := func(prefix string, n int) []string {
		w := make([]string, n)
		for i := range w {
			w[i] = prefix + strconv.Itoa(i)
		}
		return w
	}
	f := newFixture(t,
		role("", "all", grant(words("v", 100), s("*"), s("*"))), // not escalate
		bind("", "alice-all", "ClusterRole", "all", subj("User", "alice")),
	)
	g := NewGuard(f.view, NewAuthorizer(f.view))
	alice := user("alice", "system:authenticated")
	a := create("clusterroles", "")
	a.User = alice
	atLimit := role("", "big", grant(words("v", 100), words("g", 10), words("r", 100))) // 100,000
	if err := g.CheckWrite(context.Background(), a, api.Object(atLimit), nil); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	past := role("", "big", grant(words("v", 100), words("g", 10), words("r", 100)), grant(s("get"), s(""), s("pods")))
	var se *api.StatusError
	err := g.CheckWrite(context.Background(), a, api.Object(past), nil)
	if !errors.As(err, &se) || se.Status.Code != 403 || !strings.Contains(se.Status.Message, "more than 100000 combinations") {
		t.Fatalf("past the limit: %v", err)
	}
}
