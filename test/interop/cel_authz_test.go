package interop

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/listwatch/listwatch/internal/cellib"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// authzDecide is the decision both authorizers give, from the fields the
// library sets; it returns what it was asked too, for comparison.
func authzDecide(user string, groups []string, verb, path, group, version, resource, sub, ns, name string, resourceRequest bool) (allow, deny bool, reason string, err error, asked string) {
	asked = fmt.Sprintf("%s %v %s %q %v %s/%s/%s/%s %s/%s", user, groups, verb, path, resourceRequest, group, version, resource, sub, ns, name)
	switch {
	case path == "/broken":
		return false, false, "", errors.New("no rules"), asked
	case verb == "delete":
		return false, true, "deletes are denied", nil, asked
	case user == "alice" && resource == "pods" && ns == "ns" && verb == "create":
		return true, false, "allowed by test", nil, asked
	case user == "system:serviceaccount:ns:sa" && len(groups) == 2 && groups[1] == "system:serviceaccounts:ns" && verb == "get":
		return true, false, "", nil, asked
	}
	return false, false, "", nil, asked
}

// TestCELAuthzDifferential evaluates expressions of kube's authorization
// library with kube's own library and with ours, over authorizers giving
// the same decisions: the results, errors, runtime costs and what each
// asked its authorizer must be equal.
func TestCELAuthzDifferential(t *testing.T) {
	exprs := []string{
		`authorizer.group('').resource('pods').namespace('ns').check('create').allowed()`,
		`authorizer.group('').resource('pods').namespace('ns').check('create').reason()`,
		`authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns').name('d').check('update').allowed()`,
		`authorizer.group('').resource('pods').namespace('ns').check('delete').reason()`,
		`authorizer.group('').resource('pods').namespace('ns').check('delete').allowed()`,
		`authorizer.requestResource.check('create').allowed()`,
		`authorizer.requestResource.subresource('').name('x').check('create').allowed()`,
		`authorizer.path('/healthz').check('get').allowed()`,
		`authorizer.path('/broken').check('get').errored()`,
		`authorizer.path('/broken').check('get').error()`,
		`authorizer.path('/healthz').check('get').error()`,
		`authorizer.path(' ').check('get').allowed()`,
		`authorizer.group('').resource(' ').check('get').allowed()`,
		`authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('get').allowed()`,
		`authorizer.serviceAccount('ns', 'A_b').path('/').check('get').allowed()`,
		`authorizer.serviceAccount('n.s', 'a').path('/').check('get').allowed()`,
		`authorizer.group('').resource('pods').fieldSelector('spec.nodeName=n').labelSelector('a=b,c in (d)').check('list').allowed()`,
		`authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed()`,
		`authorizer == authorizer`,
	}
	kubeAsked, ourAsked := []string{}, []string{}
	kubeAz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		allow, deny, reason, err, asked := authzDecide(a.GetUser().GetName(), a.GetUser().GetGroups(), a.GetVerb(), a.GetPath(),
			a.GetAPIGroup(), a.GetAPIVersion(), a.GetResource(), a.GetSubresource(), a.GetNamespace(), a.GetName(), a.IsResourceRequest())
		kubeAsked = append(kubeAsked, asked)
		switch {
		case allow:
			return authorizer.DecisionAllow, reason, err
		case deny:
			return authorizer.DecisionDeny, reason, err
		}
		return authorizer.DecisionNoOpinion, reason, err
	})
	ours := authzFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		allow, deny, reason, err, asked := authzDecide(a.User.Name, a.User.Groups, a.Verb, a.Path,
			a.APIGroup, a.APIVersion, a.Resource, a.Subresource, a.Namespace, a.Name, a.ResourceRequest)
		ourAsked = append(ourAsked, asked)
		switch {
		case allow:
			return authz.Allow, reason, err
		case deny:
			return authz.Deny, reason, err
		}
		return authz.NoOpinion, reason, err
	})

	vars := []cel.EnvOption{cel.Variable("authorizer", library.AuthorizerType), cel.Variable("authorizer.requestResource", library.ResourceCheckType)}
	kubeEnv, err := cel.NewEnv(append(vars, library.Authz(), library.AuthzSelectors())...)
	if err != nil {
		t.Fatal(err)
	}
	ourEnv, err := cel.NewEnv(append(cellib.EnvOptions(), cel.Variable("authorizer", cellib.AuthorizerType), cel.Variable("authorizer.requestResource", cellib.ResourceCheckType))...)
	if err != nil {
		t.Fatal(err)
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	kubeVars := map[string]any{
		"authorizer": library.NewAuthorizerVal(alice, kubeAz),
		"authorizer.requestResource": library.NewResourceAuthorizerVal(alice, kubeAz, admission.NewAttributesRecord(nil, nil,
			schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "ns", "p", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "status",
			admission.Create, nil, false, alice)),
	}
	ctx := context.Background()
	ourAlice := &authn.User{Name: "alice", Groups: []string{"system:authenticated"}}
	ourVars := map[string]any{
		"authorizer":                 cellib.NewAuthorizer(ctx, ours, ourAlice),
		"authorizer.requestResource": cellib.NewResourceCheck(ctx, ours, ourAlice, "", "pods", "status", "ns", "p"),
	}
	for _, expr := range exprs {
		kubeAsked, ourAsked = kubeAsked[:0], ourAsked[:0]
		want := evalWith(t, kubeEnv, expr, kubeVars, cel.CostTracking(&library.CostEstimator{}))
		got := evalWith(t, ourEnv, expr, ourVars, cel.CostTracking(cellib.Costs{}))
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", expr, got, want)
		}
		if fmt.Sprint(ourAsked) != fmt.Sprint(kubeAsked) {
			t.Errorf("%s: asked\n %q\nwant %q", expr, ourAsked, kubeAsked)
		}
	}
}

type authzFunc func(context.Context, authz.Attributes) (authz.Decision, string, error)

func (f authzFunc) Authorize(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	return f(ctx, a)
}

// evalWith is an expression's value or error, and its runtime cost.
func evalWith(t *testing.T, env *cel.Env, expr string, vars map[string]any, opts ...cel.ProgramOption) string {
	t.Helper()
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return "compile: " + iss.Err().Error()
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		t.Fatal(err)
	}
	out, det, err := prg.Eval(vars)
	cost := *det.ActualCost()
	if err != nil {
		return fmt.Sprintf("error %v, cost %d", err, cost)
	}
	return fmt.Sprintf("%v, cost %d", out.Value(), cost)
}
