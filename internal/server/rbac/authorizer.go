package rbac

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// Privileged allows every request of a member of system:masters
// (authn.SystemPrivilegedGroup), as kube's privileged group authorizer,
// and has no opinion on the others.
type Privileged struct{}

// Authorize implements authz.Authorizer.
func (Privileged) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.User != nil && slices.Contains(a.User.Groups, authn.SystemPrivilegedGroup) {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}

// Authorizer is the RBAC authorizer over a View.
type Authorizer struct{ view *View }

var (
	_ authz.Authorizer   = Authorizer{}
	_ authz.RuleResolver = Authorizer{}
)

// NewAuthorizer returns the RBAC authorizer of v's roles and bindings.
func NewAuthorizer(v *View) Authorizer { return Authorizer{view: v} }

// Authorize allows a request a rule of its user's allows, the reason
// naming the binding, as kube's "RBAC: allowed by ..."; it has no opinion
// otherwise, the reason then naming the roles that bindings of the user
// name but that do not exist, as kube's "RBAC: ..." reason.
func (z Authorizer) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.User == nil {
		return authz.NoOpinion, "", nil
	}
	var by *binding // a binding is never changed once indexed
	z.view.mu.RLock()
	errs := z.view.visit(a.User, a.Namespace, func(b *binding, r *authz.Rule) bool {
		if allows(&a, r) {
			by = b
		}
		return by == nil
	})
	z.view.mu.RUnlock()
	if by != nil {
		return authz.Allow, by.reason(a.User), nil
	}
	if len(errs) > 0 {
		return authz.NoOpinion, "RBAC: " + aggregate(errs), nil
	}
	return authz.NoOpinion, "", nil
}

// RulesFor lists the rules user holds in namespace (those of cluster-wide
// bindings included). err names the roles that bindings name but that do
// not exist; the rules are complete otherwise.
func (z Authorizer) RulesFor(_ context.Context, user *authn.User, namespace string) ([]authz.Rule, error) {
	var rules []authz.Rule
	z.view.mu.RLock()
	errs := z.view.visit(user, namespace, func(_ *binding, r *authz.Rule) bool {
		rules = append(rules, *r)
		return true
	})
	z.view.mu.RUnlock()
	if len(errs) > 0 {
		return rules, errors.New(aggregate(errs))
	}
	return rules, nil
}

// aggregate prints errors as kube's utilerrors aggregate: one alone, or
// several, without repeats, in brackets. They are sorted: the view's
// order is a map's.
func aggregate(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	slices.Sort(msgs)
	msgs = slices.Compact(msgs)
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}
