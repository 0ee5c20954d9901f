package cli

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/rbac"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// The authorization modes, kube's --authorization-mode names.
const (
	modeRBAC        = "RBAC"
	modeAlwaysAllow = "AlwaysAllow"
)

// authorization is what the authorization flags configure.
type authorization struct {
	modes      []string
	authorizer authz.Authorizer
	hook       server.WriteHook   // nil without RBAC
	rules      authz.RuleResolver // for SelfSubjectRulesReview: each mode's rules
	anonymous  bool               // requests without credentials are system:anonymous
	close      func()             // stops following RBAC objects
}

// authorizationModes are the modes asked for, or by default RBAC when an
// authenticator is configured and AlwaysAllow in the loopback-only
// anonymous mode, where every request is anonymous.
func (o *serveOptions) authorizationModes(authenticated bool) ([]string, error) {
	if len(o.authzModes) == 0 {
		if authenticated {
			return []string{modeRBAC}, nil
		}
		return []string{modeAlwaysAllow}, nil
	}
	for i, m := range o.authzModes {
		if m != modeRBAC && m != modeAlwaysAllow {
			return nil, fmt.Errorf("--authorization-mode: unknown mode %q: RBAC or AlwaysAllow", m)
		}
		if slices.Contains(o.authzModes[:i], m) {
			return nil, fmt.Errorf("--authorization-mode: %q given twice", m)
		}
	}
	return o.authzModes, nil
}

// authorization builds the authorizers of the modes in order, RBAC after
// system:masters' privileged group authorizer as in kube, each reporting
// its decisions to m. Anonymous requests are allowed, when an
// authenticator is configured, unless --anonymous-auth=false or the only
// mode is AlwaysAllow (kube disables them then).
func (o *serveOptions) authorization(ctx context.Context, store storage.Interface, m *metrics.Metrics, authenticated bool) (*authorization, error) {
	modes, err := o.authorizationModes(authenticated)
	if err != nil {
		return nil, err
	}
	a := &authorization{modes: modes, close: func() {}}
	a.anonymous = authenticated && o.anonymousAuth && !slices.Equal(modes, []string{modeAlwaysAllow})
	var union authz.Union
	var view *rbac.View
	var rules authz.UnionRules
	for _, mode := range modes {
		record := m.AuthorizationDecisions(mode, strings.ToLower(mode))
		switch mode {
		case modeAlwaysAllow:
			union = append(union, authz.Instrumented{Authorizer: authz.AlwaysAllow{}, Record: record})
			rules = append(rules, authz.AlwaysAllow{})
		case modeRBAC:
			if view, err = rbac.Start(ctx, store, resource.Builtins(), slog.Default()); err != nil {
				return nil, err
			}
			a.close = view.Close
			z := rbac.NewAuthorizer(view)
			rules = append(rules, z)
			union = append(union, rbac.Privileged{}, authz.Instrumented{Authorizer: z, Record: record})
		}
	}
	a.authorizer, a.rules = union, rules
	if len(union) == 1 {
		a.authorizer = union[0]
	}
	if len(rules) == 1 {
		a.rules = rules[0]
	}
	if view != nil {
		// escalate and bind are asked of every authorizer, as kube's
		// RoleEscalationAuthorized does.
		a.hook = rbac.NewGuard(view, a.authorizer)
	}
	return a, nil
}
