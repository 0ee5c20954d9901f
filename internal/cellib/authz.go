package cellib

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/listwatch/listwatch/internal/kubefmt"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// kube's authorization library (k8s.io/apiserver/pkg/cel/library/authz.go,
// and the selectors of authz_selectors). Its receivers come only from the
// authorizer variables of admission policies and webhook match conditions
// (NewAuthorizer, NewResourceCheck), which CRD rules lack, so no rule's
// call type-checks; but its names are declared in kube's base environment,
// so that x.name('n') fails as "found no matching overload", not
// "undeclared reference".

// The types of the library, and of the authorizer variables:
// AuthorizerType is authorizer's, ResourceCheckType
// authorizer.requestResource's.
var (
	AuthorizerType    = cel.ObjectType("kubernetes.authorization.Authorizer")
	pathCheckType     = cel.ObjectType("kubernetes.authorization.PathCheck")
	groupCheckType    = cel.ObjectType("kubernetes.authorization.GroupCheck")
	ResourceCheckType = cel.ObjectType("kubernetes.authorization.ResourceCheck")
	decisionType      = cel.ObjectType("kubernetes.authorization.Decision")
)

// NewAuthorizer is the value of the authorizer variable: its checks ask
// az about user, within ctx (the request's).
func NewAuthorizer(ctx context.Context, az authz.Authorizer, user *authn.User) ref.Val {
	return authorizerVal{ctx: ctx, az: az, user: user}
}

// NewResourceCheck is the value of authorizer.requestResource: a resource
// check of the request's own resource, subresource, namespace and name.
func NewResourceCheck(ctx context.Context, az authz.Authorizer, user *authn.User, group, resource, subresource, namespace, name string) ref.Val {
	return resourceCheckVal{
		groupCheck: groupCheckVal{authorizer: authorizerVal{ctx: ctx, az: az, user: user}, group: group},
		resource:   resource, subresource: subresource, namespace: namespace, name: name,
	}
}

type authorizerVal struct {
	ctx  context.Context
	az   authz.Authorizer
	user *authn.User
}

type pathCheckVal struct {
	authorizer authorizerVal
	path       string
}

type groupCheckVal struct {
	authorizer authorizerVal
	group      string
}

type resourceCheckVal struct {
	groupCheck                             groupCheckVal
	resource, subresource, namespace, name string
	fieldSelector, labelSelector           string
}

type decisionVal struct {
	decision authz.Decision
	reason   string
	err      error
}

// Each is a receiver only: no fields, no conversions but to its type.
var (
	authorizerTypeValue    = types.NewTypeValue(AuthorizerType.String())
	pathCheckTypeValue     = types.NewTypeValue(pathCheckType.String())
	groupCheckTypeValue    = types.NewTypeValue(groupCheckType.String())
	resourceCheckTypeValue = types.NewTypeValue(ResourceCheckType.String())
	decisionTypeValue      = types.NewTypeValue(decisionType.String())
)

func (v authorizerVal) Type() ref.Type    { return authorizerTypeValue }
func (v pathCheckVal) Type() ref.Type     { return pathCheckTypeValue }
func (v groupCheckVal) Type() ref.Type    { return groupCheckTypeValue }
func (v resourceCheckVal) Type() ref.Type { return resourceCheckTypeValue }
func (v decisionVal) Type() ref.Type      { return decisionTypeValue }

func (v authorizerVal) ConvertToNative(t reflect.Type) (any, error)    { return receiverToNative(v, t) }
func (v pathCheckVal) ConvertToNative(t reflect.Type) (any, error)     { return receiverToNative(v, t) }
func (v groupCheckVal) ConvertToNative(t reflect.Type) (any, error)    { return receiverToNative(v, t) }
func (v resourceCheckVal) ConvertToNative(t reflect.Type) (any, error) { return receiverToNative(v, t) }
func (v decisionVal) ConvertToNative(t reflect.Type) (any, error)      { return receiverToNative(v, t) }

func (v authorizerVal) ConvertToType(t ref.Type) ref.Val    { return convertToType(v, t) }
func (v pathCheckVal) ConvertToType(t ref.Type) ref.Val     { return convertToType(v, t) }
func (v groupCheckVal) ConvertToType(t ref.Type) ref.Val    { return convertToType(v, t) }
func (v resourceCheckVal) ConvertToType(t ref.Type) ref.Val { return convertToType(v, t) }
func (v decisionVal) ConvertToType(t ref.Type) ref.Val      { return convertToType(v, t) }

// Equal is kube's: its receiverOnlyObjectVal.Equal accepts only itself,
// which no value of the library is, so every comparison is an error.
func (v authorizerVal) Equal(o ref.Val) ref.Val    { return receiverEqual(v, o) }
func (v pathCheckVal) Equal(o ref.Val) ref.Val     { return receiverEqual(v, o) }
func (v groupCheckVal) Equal(o ref.Val) ref.Val    { return receiverEqual(v, o) }
func (v resourceCheckVal) Equal(o ref.Val) ref.Val { return receiverEqual(v, o) }
func (v decisionVal) Equal(o ref.Val) ref.Val      { return receiverEqual(v, o) }

func (v authorizerVal) Value() any    { return types.NoSuchOverloadErr() }
func (v pathCheckVal) Value() any     { return types.NoSuchOverloadErr() }
func (v groupCheckVal) Value() any    { return types.NoSuchOverloadErr() }
func (v resourceCheckVal) Value() any { return types.NoSuchOverloadErr() }
func (v decisionVal) Value() any      { return types.NoSuchOverloadErr() }

func receiverToNative(v ref.Val, t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", v.Type().TypeName(), t)
}

func receiverEqual(_, o ref.Val) ref.Val { return types.MaybeNoSuchOverloadErr(o) }

// check asks the authorizer about a path (kube's pathCheckVal.Authorize).
func (p pathCheckVal) check(verb string) ref.Val {
	a := p.authorizer
	return newDecision(a.az.Authorize(a.ctx, authz.Attributes{User: a.user, Verb: verb, Path: p.path}))
}

// check asks the authorizer about a resource, in every version (kube's
// resourceCheckVal.Authorize). The selectors are kept for kube's costs;
// the RBAC authorizer, as kube's, does not read them.
func (r resourceCheckVal) check(verb string) ref.Val {
	a := r.groupCheck.authorizer
	return newDecision(a.az.Authorize(a.ctx, authz.Attributes{
		User: a.user, Verb: verb, ResourceRequest: true, APIGroup: r.groupCheck.group, APIVersion: "*",
		Resource: r.resource, Subresource: r.subresource, Namespace: r.namespace, Name: r.name,
	}))
}

func newDecision(d authz.Decision, reason string, err error) ref.Val {
	return decisionVal{decision: d, reason: reason, err: err}
}

// receiver is the Go value of a call's receiver, or the error kube's
// bindings give for another.
func receiver[T ref.Val](v ref.Val) (T, ref.Val) {
	r, ok := v.(T)
	if !ok {
		return r, types.MaybeNoSuchOverloadErr(v)
	}
	return r, nil
}

// withString is a binding of a member function taking a string.
func withString[T ref.Val](f func(T, string) ref.Val) cel.OverloadOpt {
	return cel.BinaryBinding(func(lhs, rhs ref.Val) ref.Val {
		r, bad := receiver[T](lhs)
		if bad != nil {
			return bad
		}
		s, ok := rhs.Value().(string)
		if !ok {
			return types.MaybeNoSuchOverloadErr(lhs)
		}
		return f(r, s)
	})
}

// ofDecision is a binding of one of a decision's accessors.
func ofDecision(f func(decisionVal) ref.Val) cel.OverloadOpt {
	return cel.UnaryBinding(func(v ref.Val) ref.Val {
		d, bad := receiver[decisionVal](v)
		if bad != nil {
			return bad
		}
		return f(d)
	})
}

var authzLib = library{options: authzOptions(), estimate: authzEstimate, cost: authzCost}

func authzOptions() []cel.EnvOption {
	member := func(name, overload string, result *cel.Type, args []*cel.Type, binding cel.OverloadOpt) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(overload, args, result, binding))
	}
	// set is the binding of a resource check's setter of one field.
	set := func(field func(*resourceCheckVal) *string) cel.OverloadOpt {
		return withString(func(r resourceCheckVal, s string) ref.Val {
			*field(&r) = s
			return r
		})
	}
	str := cel.StringType
	return []cel.EnvOption{
		member("path", "authorizer_path", pathCheckType, []*cel.Type{AuthorizerType, str}, withString(func(a authorizerVal, path string) ref.Val {
			if strings.TrimSpace(path) == "" {
				return types.NewErr("path must not be empty")
			}
			return pathCheckVal{authorizer: a, path: path}
		})),
		member("group", "authorizer_group", groupCheckType, []*cel.Type{AuthorizerType, str}, withString(func(a authorizerVal, group string) ref.Val {
			return groupCheckVal{authorizer: a, group: group}
		})),
		member("serviceAccount", "authorizer_serviceaccount", AuthorizerType, []*cel.Type{AuthorizerType, str, str}, cel.FunctionBinding(serviceAccount)),
		member("resource", "groupcheck_resource", ResourceCheckType, []*cel.Type{groupCheckType, str}, withString(func(g groupCheckVal, resource string) ref.Val {
			if strings.TrimSpace(resource) == "" {
				return types.NewErr("resource must not be empty")
			}
			return resourceCheckVal{groupCheck: g, resource: resource}
		})),
		member("subresource", "resourcecheck_subresource", ResourceCheckType, []*cel.Type{ResourceCheckType, str}, set(func(r *resourceCheckVal) *string { return &r.subresource })),
		member("namespace", "resourcecheck_namespace", ResourceCheckType, []*cel.Type{ResourceCheckType, str}, set(func(r *resourceCheckVal) *string { return &r.namespace })),
		member("name", "resourcecheck_name", ResourceCheckType, []*cel.Type{ResourceCheckType, str}, set(func(r *resourceCheckVal) *string { return &r.name })),
		cel.Function("check",
			cel.MemberOverload("pathcheck_check", []*cel.Type{pathCheckType, str}, decisionType, withString(pathCheckVal.check)),
			cel.MemberOverload("resourcecheck_check", []*cel.Type{ResourceCheckType, str}, decisionType, withString(resourceCheckVal.check))),
		member("errored", "decision_errored", cel.BoolType, []*cel.Type{decisionType}, ofDecision(func(d decisionVal) ref.Val { return types.Bool(d.err != nil) })),
		member("error", "decision_error", str, []*cel.Type{decisionType}, ofDecision(func(d decisionVal) ref.Val {
			if d.err == nil {
				return types.String("")
			}
			return types.String(d.err.Error())
		})),
		member("allowed", "decision_allowed", cel.BoolType, []*cel.Type{decisionType}, ofDecision(func(d decisionVal) ref.Val { return types.Bool(d.decision == authz.Allow) })),
		member("reason", "decision_reason", str, []*cel.Type{decisionType}, ofDecision(func(d decisionVal) ref.Val { return types.String(d.reason) })),
		member("fieldSelector", "authorizer_fieldselector", ResourceCheckType, []*cel.Type{ResourceCheckType, str}, set(func(r *resourceCheckVal) *string { return &r.fieldSelector })),
		member("labelSelector", "authorizer_labelselector", ResourceCheckType, []*cel.Type{ResourceCheckType, str}, set(func(r *resourceCheckVal) *string { return &r.labelSelector })),
	}
}

// serviceAccount is the authorizer of a service account: its user and
// groups, as kube's ServiceAccountInfo.UserInfo.
func serviceAccount(args ...ref.Val) ref.Val {
	if len(args) != 3 {
		return types.NoSuchOverloadErr()
	}
	a, bad := receiver[authorizerVal](args[0])
	if bad != nil {
		return bad
	}
	namespace, ok := args[1].Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[1])
	}
	name, ok := args[2].Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[2])
	}
	if len(kubefmt.Util.DNS1123Subdomain(name)) > 0 {
		return types.NewErr("Invalid service account name")
	}
	if len(kubefmt.Util.DNS1123Label(namespace)) > 0 {
		return types.NewErr("Invalid service account namespace")
	}
	a.user = &authn.User{
		Name:   "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
	}
	return a
}

// authzCheckCost is kube's fixed cost of a check, set so that an
// expression can make two.
const authzCheckCost = 350_000

// The costs of kube's selector parse: a base list, a traversal of the
// string and a requirement per two bytes.
const (
	selectorBytesPerRequirement = 2
	costPerRequirement          = common.ListCreateBaseCost + common.StructCreateBaseCost
)

func selectorCost(size checker.SizeEstimate) checker.CostEstimate {
	parse := size.MultiplyByCostFactor(common.StringTraversalCostFactor)
	requirements := size.MultiplyByCostFactor(1.0 / selectorBytesPerRequirement).MultiplyByCostFactor(costPerRequirement)
	return checker.CostEstimate{Min: common.ListCreateBaseCost, Max: common.ListCreateBaseCost}.Add(parse).Add(requirements)
}

func authzEstimate(sizes checker.CostEstimator, function, _ string, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	switch function {
	case "check":
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: authzCheckCost, Max: authzCheckCost}}
	case "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed", "reason", "error", "errored":
		return nominal
	case "fieldSelector", "labelSelector":
		if len(args) == 1 {
			return &checker.CallEstimate{CostEstimate: selectorCost(sizeOf(sizes, args[0]))}
		}
	}
	return nil
}

func authzCost(function, _ string, args []ref.Val, _ ref.Val) *uint64 {
	switch function {
	case "check":
		return costOf(authzCheckCost)
	case "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed", "reason", "error", "errored":
		return costOf(1)
	case "fieldSelector", "labelSelector":
		if len(args) >= 2 {
			n := actualSize(args[1])
			return costOf(selectorCost(checker.SizeEstimate{Min: n, Max: n}).Max)
		}
	}
	return nil
}
