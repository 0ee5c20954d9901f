package authz

import (
	"context"
	"errors"
	"strings"

	"github.com/listwatch/listwatch/internal/server/authn"
)

// Union asks each authorizer in turn, as kube's union authorizer: the
// first Allow or Deny decides; when all have no opinion the reasons (and
// errors) of those that gave one are joined.
type Union []Authorizer

// Authorize implements Authorizer.
func (u Union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var reasons []string
	var errs []error
	for _, z := range u {
		d, reason, err := z.Authorize(ctx, a)
		if d != NoOpinion {
			return d, reason, err
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return NoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}

// UnionRules lists the rules of each resolver, as kube's union rule
// resolver: all their rules, and the errors of those that failed.
type UnionRules []RuleResolver

// RulesFor implements RuleResolver.
func (u UnionRules) RulesFor(ctx context.Context, user *authn.User, namespace string) ([]Rule, error) {
	var rules []Rule
	var errs []error
	for _, r := range u {
		rs, err := r.RulesFor(ctx, user, namespace)
		rules = append(rules, rs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return rules, errors.Join(errs...)
}

// Instrumented reports each terminal decision of an authorizer ("allowed"
// or "denied") to record, as kube's instrumentedAuthorizer.
type Instrumented struct {
	Authorizer
	Record func(decision string)
}

// Authorize implements Authorizer.
func (z Instrumented) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	d, reason, err := z.Authorizer.Authorize(ctx, a)
	switch d {
	case Allow:
		z.Record("allowed")
	case Deny:
		z.Record("denied")
	}
	return d, reason, err
}
