package authz

import (
	"context"
	"errors"
	"strings"
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
