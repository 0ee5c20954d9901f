package cellib

import "github.com/google/cel-go/cel"

// authz declares kube's authorization library (k8s.io/apiserver/pkg/cel/
// library/authz.go, and the selectors of authz_selectors): its receivers
// come only from the authorizer variable of admission policies, which CRD
// rules lack, so no rule's call type-checks; but its names are declared in
// kube's base environment, so that x.name('n') fails as "found no matching
// overload", not "undeclared reference". Declarations alone, no bindings.
var authz = library{options: authzOptions()}

func authzOptions() []cel.EnvOption {
	var (
		authorizer = cel.ObjectType("kubernetes.authorization.Authorizer")
		pathCheck  = cel.ObjectType("kubernetes.authorization.PathCheck")
		groupCheck = cel.ObjectType("kubernetes.authorization.GroupCheck")
		resource   = cel.ObjectType("kubernetes.authorization.ResourceCheck")
		decision   = cel.ObjectType("kubernetes.authorization.Decision")
	)
	member := func(name, overload string, result *cel.Type, args ...*cel.Type) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(overload, args, result))
	}
	return []cel.EnvOption{
		member("path", "authorizer_path", pathCheck, authorizer, cel.StringType),
		member("group", "authorizer_group", groupCheck, authorizer, cel.StringType),
		member("serviceAccount", "authorizer_serviceaccount", authorizer, authorizer, cel.StringType, cel.StringType),
		member("resource", "groupcheck_resource", resource, groupCheck, cel.StringType),
		member("subresource", "resourcecheck_subresource", resource, resource, cel.StringType),
		member("namespace", "resourcecheck_namespace", resource, resource, cel.StringType),
		member("name", "resourcecheck_name", resource, resource, cel.StringType),
		cel.Function("check",
			cel.MemberOverload("pathcheck_check", []*cel.Type{pathCheck, cel.StringType}, decision),
			cel.MemberOverload("resourcecheck_check", []*cel.Type{resource, cel.StringType}, decision)),
		member("errored", "decision_errored", cel.BoolType, decision),
		member("error", "decision_error", cel.StringType, decision),
		member("allowed", "decision_allowed", cel.BoolType, decision),
		member("reason", "decision_reason", cel.StringType, decision),
		member("fieldSelector", "authorizer_fieldselector", resource, resource, cel.StringType),
		member("labelSelector", "authorizer_labelselector", resource, resource, cel.StringType),
	}
}
