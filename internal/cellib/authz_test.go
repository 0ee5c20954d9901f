package cellib

import (
	"context"
	"errors"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// recorder is an authorizer that allows the user alice to create pods in
// ns, and records what it is asked.
type recorder struct{ asked []authz.Attributes }

func (r *recorder) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	r.asked = append(r.asked, a)
	switch {
	case a.Path == "/broken":
		return authz.NoOpinion, "", errors.New("no rules")
	case a.User.Name == "alice" && a.Resource == "pods" && a.Namespace == "ns" && a.Verb == "create":
		return authz.Allow, "allowed by test", nil
	}
	return authz.NoOpinion, "", nil
}

// TestAuthz evaluates kube's documented uses of the authorizer variables
// and checks what the authorizer is asked, and the costs kube gives them.
func TestAuthz(t *testing.T) {
	alice := &authn.User{Name: "alice", Groups: []string{"system:authenticated"}}
	for _, tt := range []struct {
		expr  string
		asked []authz.Attributes
		cost  uint64
	}{
		{`authorizer.group('').resource('pods').namespace('ns').check('create').allowed()`,
			[]authz.Attributes{{User: alice, Verb: "create", ResourceRequest: true, APIVersion: "*", Resource: "pods", Namespace: "ns"}}, 350_005},
		{`authorizer.group('').resource('pods').namespace('ns').check('create').reason() == 'allowed by test'`, nil, 350_007},
		{`!authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns').name('d').check('update').allowed()`,
			[]authz.Attributes{{User: alice, Verb: "update", ResourceRequest: true, APIGroup: "apps", APIVersion: "*", Resource: "deployments", Subresource: "scale", Namespace: "ns", Name: "d"}}, 350_008},
		{`authorizer.requestResource.check('create').allowed()`,
			[]authz.Attributes{{User: alice, Verb: "create", ResourceRequest: true, APIVersion: "*", Resource: "pods", Subresource: "status", Namespace: "ns", Name: "p"}}, 350_002},
		{`!authorizer.path('/healthz').check('get').allowed() && authorizer.path('/healthz').check('get').error() == ''`,
			[]authz.Attributes{{User: alice, Verb: "get", Path: "/healthz"}, {User: alice, Verb: "get", Path: "/healthz"}}, 700_007},
		{`authorizer.path('/broken').check('get').errored() && authorizer.path('/broken').check('get').error() == 'no rules'`, nil, 700_007},
		{`!authorizer.serviceAccount('ns', 'sa').group('').resource('pods').namespace('ns').check('create').allowed()`,
			[]authz.Attributes{{User: &authn.User{Name: "system:serviceaccount:ns:sa", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns"}},
				Verb: "create", ResourceRequest: true, APIVersion: "*", Resource: "pods", Namespace: "ns"}}, 350_007},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			r := &recorder{}
			out, cost, err := evalAuthz(t, tt.expr, r, alice)
			if err != nil || out != true {
				t.Fatalf("got %v, %v; want true", out, err)
			}
			if tt.asked != nil {
				if d := cmp.Diff(tt.asked, r.asked); d != "" {
					t.Errorf("asked (-want +got):\n%s", d)
				}
			}
			if cost != tt.cost {
				t.Errorf("cost %d, want %d", cost, tt.cost)
			}
		})
	}
	for expr, want := range map[string]string{
		`authorizer.path(' ').check('get').allowed()`:                             "path must not be empty",
		`authorizer.group('').resource('').check('get').allowed()`:                "resource must not be empty",
		`authorizer.serviceAccount('ns', 'A_b').path('/').check('get').allowed()`: "Invalid service account name",
		`authorizer.serviceAccount('n.s', 'a').path('/').check('get').allowed()`:  "Invalid service account namespace",
		`authorizer == authorizer`:                                                "no such overload",
	} {
		if _, _, err := evalAuthz(t, expr, &recorder{}, alice); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", expr, err, want)
		}
	}
}

func evalAuthz(t *testing.T, expr string, az authz.Authorizer, user *authn.User) (any, uint64, error) {
	t.Helper()
	env, err := testEnv(t).Extend(cel.Variable("authorizer", AuthorizerType), cel.Variable("authorizer.requestResource", ResourceCheckType))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out, cost, err := evalIn(t, env, expr, map[string]any{
		"authorizer":                 NewAuthorizer(ctx, az, user),
		"authorizer.requestResource": NewResourceCheck(ctx, az, user, "", "pods", "status", "ns", "p"),
	})
	if err != nil {
		return nil, 0, err
	}
	return out.Value(), cost, nil
}
