package policies

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/crd"
)

// ExpressionWarning is one of a ValidatingAdmissionPolicy's
// status.typeChecking.expressionWarnings.
type ExpressionWarning struct {
	FieldRef string `json:"fieldRef"`
	Warning  string `json:"warning"`
}

// KindSchema gives the kind of a group, version and resource and the
// schema of its objects (crd.TypeSchema; nil when it has none); ok is
// false when the resource is not served.
type KindSchema func(group, version, resource string) (kind string, schema *crd.Schema, ok bool)

// maxTypesToCheck is kube's bound on the kinds a policy is checked against.
const maxTypesToCheck = 10

// TypeCheck is kube's TypeChecker.Check: each validation's expression and
// messageExpression compiled with object and oldObject typed by the
// schema of each kind the policy's resource rules name exactly (no
// wildcards, no subresources; at most 10, sorted by group, version and
// kind), each failure a warning "GVK: issues". Only kinds kinds gives a
// schema for are checked, and params, request, namespaceObject and
// variables stay dynamic (kube types them): the issues are some of
// kube's, never one kube would not report.
func TypeCheck(obj api.Object, kinds KindSchema) []ExpressionWarning {
	s, err := readSpec(obj)
	if err != nil || s.MatchConstraints == nil {
		return nil
	}
	type typed struct {
		gvk webhook.GVK
		env *cel.Env
	}
	var checked []typed
	seen := map[webhook.GVK]bool{}
	base := crd.BaseCELEnv()
	count := 0 // kinds resolved, counted as kube counts them
	for _, r := range s.MatchConstraints.ResourceRules {
		groups, versions := exact(r.APIGroups), exact(r.APIVersions)
		var resources []string
		for _, res := range r.Resources {
			if !strings.ContainsAny(res, "*/") {
				resources = append(resources, res)
			}
		}
		for _, g := range sorted(groups) {
			for _, v := range sorted(versions) {
				for _, res := range sorted(resources) {
					kind, schema, ok := kinds(g, v, res)
					if !ok || count == maxTypesToCheck {
						continue
					}
					count++
					gvk := webhook.GVK{Group: g, Version: v, Kind: kind}
					if seen[gvk] || schema == nil {
						continue
					}
					seen[gvk] = true
					if env, err := typedEnv(base, schema, kind, s.ParamKind != nil); err == nil {
						checked = append(checked, typed{gvk: gvk, env: env})
					}
				}
			}
		}
	}
	slices.SortFunc(checked, func(a, b typed) int {
		return cmp.Or(cmp.Compare(a.gvk.Group, b.gvk.Group), cmp.Compare(a.gvk.Version, b.gvk.Version), cmp.Compare(a.gvk.Kind, b.gvk.Kind))
	})
	var warnings []ExpressionWarning
	check := func(field, expr string) {
		var msgs []string
		for _, c := range checked {
			if _, iss := c.env.Compile(expr); iss.Err() != nil {
				// kube's TypeCheckingResult.String: "<GVK>: <issues>\n".
				msgs = append(msgs, fmt.Sprintf("%s/%s, Kind=%s: %s\n", c.gvk.Group, c.gvk.Version, c.gvk.Kind, iss.String()))
			}
		}
		if len(msgs) > 0 {
			warnings = append(warnings, ExpressionWarning{FieldRef: field, Warning: strings.Join(msgs, "\n")})
		}
	}
	for i, v := range s.Validations {
		check(fmt.Sprintf("spec.validations[%d].expression", i), v.Expression)
		if v.MessageExpression != "" {
			check(fmt.Sprintf("spec.validations[%d].messageExpression", i), v.MessageExpression)
		}
	}
	return warnings
}

// typedEnv is a policy's environment with object and oldObject of the
// schema's type.
func typedEnv(base *cel.Env, schema *crd.Schema, kind string, hasParams bool) (*cel.Env, error) {
	// A name no expression spells, as kube's (the kind and a number).
	t, types := crd.ResourceType(base, schema, kind+"0")
	opts := append(webhook.AuthorizerVariables(), types,
		cel.Variable("object", t),
		cel.Variable("oldObject", t),
		cel.Variable("request", cel.DynType),
		cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
	)
	if hasParams {
		opts = append(opts, cel.Variable("params", cel.DynType))
	}
	return base.Extend(opts...)
}

// exact are a rule's groups or versions, none when one is a wildcard (kube
// gives up on the rule).
func exact(names []string) []string {
	for _, n := range names {
		if strings.Contains(n, "*") {
			return nil
		}
	}
	return names
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
