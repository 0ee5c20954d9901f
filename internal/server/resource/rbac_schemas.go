package resource

const rbacPrefix = "io.k8s.api.rbac.v1."

// rbacDefinitions are the schemas of rbac.authorization.k8s.io/v1 (k8s.io/api
// rbac/v1), with the meta/v1 LabelSelector that aggregation rules hold.
func rbacDefinitions() map[string]map[string]any {
	p := rbacPrefix
	atomicList := func(items map[string]any, desc string) map[string]any {
		return with(arrayOf(items, desc), "x-kubernetes-list-type", "atomic")
	}
	atomic := func(s map[string]any) map[string]any { return with(s, "x-kubernetes-map-type", "atomic") }
	rules := func() map[string]any {
		return atomicList(refItem(p+"PolicyRule"), "Rules holds all the PolicyRules for this Role")
	}
	subjects := func() map[string]any {
		return atomicList(refItem(p+"Subject"), "Subjects holds references to the objects the role applies to.")
	}
	roleRef := func(desc string) map[string]any { return ref(p+"RoleRef", desc) }
	return map[string]map[string]any{
		p + "Role": kind("rbac.authorization.k8s.io", "v1", "Role", "Role is a namespaced, logical grouping of PolicyRules that can be referenced as a unit by a RoleBinding.", map[string]any{
			"rules": rules(),
		}),
		p + "ClusterRole": kind("rbac.authorization.k8s.io", "v1", "ClusterRole", "ClusterRole is a cluster level, logical grouping of PolicyRules that can be referenced as a unit by a RoleBinding or ClusterRoleBinding.", map[string]any{
			"aggregationRule": ref(p+"AggregationRule", "AggregationRule is an optional field that describes how to build the Rules for this ClusterRole."),
			"rules":           rules(),
		}),
		p + "RoleBinding": kind("rbac.authorization.k8s.io", "v1", "RoleBinding", "RoleBinding references a role, but does not contain it.", map[string]any{
			"roleRef":  roleRef("RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable."),
			"subjects": subjects(),
		}, "roleRef"),
		p + "ClusterRoleBinding": kind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "ClusterRoleBinding references a ClusterRole, but not contain it.", map[string]any{
			"roleRef":  roleRef("RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable."),
			"subjects": subjects(),
		}, "roleRef"),
		p + "PolicyRule": object("PolicyRule holds information that describes a policy rule, but does not contain information about who the rule applies to or which namespace the rule applies to.", map[string]any{
			"apiGroups":       atomicList(str(""), "APIGroups is the name of the APIGroup that contains the resources."),
			"nonResourceURLs": atomicList(str(""), "NonResourceURLs is a set of partial urls that a user should have access to."),
			"resourceNames":   atomicList(str(""), "ResourceNames is an optional white list of names that the rule applies to."),
			"resources":       atomicList(str(""), "Resources is a list of resources this rule applies to."),
			"verbs":           atomicList(str(""), "Verbs is a list of Verbs that apply to ALL the ResourceKinds contained in this rule."),
		}, "verbs"),
		p + "Subject": atomic(object("Subject contains a reference to the object or user identities a role binding applies to.", map[string]any{
			"apiGroup":  str("APIGroup holds the API group of the referenced subject."),
			"kind":      str("Kind of object being referenced. Values defined by this API group are \"User\", \"Group\", and \"ServiceAccount\"."),
			"name":      str("Name of the object being referenced."),
			"namespace": str("Namespace of the referenced object."),
		}, "kind", "name")),
		p + "RoleRef": atomic(object("RoleRef contains information that points to the role being used", map[string]any{
			"apiGroup": str("APIGroup is the group for the resource being referenced"),
			"kind":     str("Kind is the type of resource being referenced"),
			"name":     str("Name is the name of resource being referenced"),
		}, "apiGroup", "kind", "name")),
		p + "AggregationRule": object("AggregationRule describes how to locate ClusterRoles to aggregate into the ClusterRole", map[string]any{
			"clusterRoleSelectors": atomicList(refItem(metaPrefix+"LabelSelector"), "ClusterRoleSelectors holds a list of selectors which will be used to find ClusterRoles and create the rules."),
		}),
		metaPrefix + "LabelSelector": atomic(object("A label selector is a label query over a set of resources.", map[string]any{
			"matchExpressions": atomicList(refItem(metaPrefix+"LabelSelectorRequirement"), "matchExpressions is a list of label selector requirements. The requirements are ANDed."),
			"matchLabels":      mapOf(str(""), "matchLabels is a map of {key,value} pairs."),
		})),
		metaPrefix + "LabelSelectorRequirement": object("A label selector requirement is a selector that contains values, a key, and an operator that relates the key and values.", map[string]any{
			"key":      str("key is the label key that the selector applies to."),
			"operator": str("operator represents a key's relationship to a set of values. Valid operators are In, NotIn, Exists and DoesNotExist."),
			"values":   atomicList(str(""), "values is an array of string values."),
		}, "key", "operator"),
	}
}
