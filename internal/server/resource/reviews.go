package resource

import "slices"

// The access reviews: kinds a client creates to ask a question and that
// are never stored, as kube serves them (pkg/registry/authorization and
// authentication): the answer is the object sent, its status filled.

// createOnlyVerbs are what discovery lists for a CreateOnly resource.
var createOnlyVerbs = []string{"create"}

// ServedVerbs are the verbs r serves, as discovery lists them.
func (r *Resource) ServedVerbs() []string {
	switch {
	case r.CreateOnly:
		return createOnlyVerbs
	case r.NoDeleteCollection:
		return verbsButDeleteCollection
	}
	return Verbs
}

var verbsButDeleteCollection = slices.DeleteFunc(slices.Clone(Verbs), func(v string) bool { return v == "deletecollection" })

// reviewKinds are the access reviews of authorization.k8s.io/v1 and
// authentication.k8s.io/v1.
func reviewKinds() []*Resource {
	review := func(group, plural, kind string, namespaced bool) *Resource {
		return &Resource{
			Group: group, Version: "v1", Plural: plural, Singular: lower(kind), Kind: kind,
			Namespaced: namespaced, CreateOnly: true,
		}
	}
	return []*Resource{
		review(authorizationGroup, "selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
		review(authorizationGroup, "subjectaccessreviews", "SubjectAccessReview", false),
		review(authorizationGroup, "localsubjectaccessreviews", "LocalSubjectAccessReview", true),
		review(authorizationGroup, "selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
		review(authenticationGroup, "selfsubjectreviews", "SelfSubjectReview", false),
		review(authenticationGroup, "tokenreviews", "TokenReview", false),
	}
}

const (
	authorizationGroup  = "authorization.k8s.io"
	authenticationGroup = "authentication.k8s.io"
	authzPrefix         = "io.k8s.api.authorization.v1."
	authnPrefix         = "io.k8s.api.authentication.v1."
)

// reviewDefinitions are the schemas of the access reviews (k8s.io/api
// authorization/v1 and authentication/v1).
func reviewDefinitions() map[string]map[string]any {
	a, n := authzPrefix, authnPrefix
	strs := func(desc string) map[string]any {
		return with(arrayOf(str(""), desc), "x-kubernetes-list-type", "atomic")
	}
	extra := func(desc string) map[string]any { return mapOf(arrayOf(str(""), ""), desc) }
	sarStatus := func() map[string]any {
		return ref(a+"SubjectAccessReviewStatus", "Status is filled in by the server and indicates whether the request is allowed or not")
	}
	attrs := func(props map[string]any) map[string]any {
		props["resourceAttributes"] = ref(a+"ResourceAttributes", "ResourceAuthorizationAttributes describes information for a resource access request")
		props["nonResourceAttributes"] = ref(a+"NonResourceAttributes", "NonResourceAttributes describes information for a non-resource access request")
		return props
	}
	sarSpec := func() map[string]any {
		return ref(a+"SubjectAccessReviewSpec", "Spec holds information about the request being evaluated")
	}
	selector := func(name, requirement, desc string) map[string]any {
		return object(desc, map[string]any{
			"rawSelector":  str("rawSelector is the serialization of a " + name + " selector that would be included in a query parameter."),
			"requirements": with(arrayOf(refItem(metaPrefix+requirement), "requirements is the parsed interpretation of a "+name+" selector."), "x-kubernetes-list-type", "atomic"),
		})
	}
	return map[string]map[string]any{
		a + "SelfSubjectAccessReview": kind(authorizationGroup, "v1", "SelfSubjectAccessReview", "SelfSubjectAccessReview checks whether or the current user can perform an action.", map[string]any{
			"spec":   ref(a+"SelfSubjectAccessReviewSpec", "Spec holds information about the request being evaluated.  user and groups must be empty"),
			"status": sarStatus(),
		}, "spec"),
		a + "SubjectAccessReview": kind(authorizationGroup, "v1", "SubjectAccessReview", "SubjectAccessReview checks whether or not a user or group can perform an action.", map[string]any{
			"spec": sarSpec(), "status": sarStatus(),
		}, "spec"),
		a + "LocalSubjectAccessReview": kind(authorizationGroup, "v1", "LocalSubjectAccessReview", "LocalSubjectAccessReview checks whether or not a user or group can perform an action in a given namespace.", map[string]any{
			"spec": sarSpec(), "status": sarStatus(),
		}, "spec"),
		a + "SelfSubjectRulesReview": kind(authorizationGroup, "v1", "SelfSubjectRulesReview", "SelfSubjectRulesReview enumerates the set of actions the current user can perform within a namespace.", map[string]any{
			"spec":   ref(a+"SelfSubjectRulesReviewSpec", "Spec holds information about the request being evaluated."),
			"status": ref(a+"SubjectRulesReviewStatus", "Status is filled in by the server and indicates the set of actions a user can perform."),
		}, "spec"),
		a + "SelfSubjectAccessReviewSpec": object("SelfSubjectAccessReviewSpec is a description of the access request.  Exactly one of ResourceAuthorizationAttributes and NonResourceAuthorizationAttributes must be set", attrs(map[string]any{})),
		a + "SubjectAccessReviewSpec": object("SubjectAccessReviewSpec is a description of the access request.  Exactly one of ResourceAuthorizationAttributes and NonResourceAuthorizationAttributes must be set", attrs(map[string]any{
			"extra":  extra("Extra corresponds to the user.Info.GetExtra() method from the authenticator."),
			"groups": strs("Groups is the groups you're testing for."),
			"uid":    str("UID information about the requesting user."),
			"user":   str("User is the user you're testing for."),
		})),
		a + "ResourceAttributes": object("ResourceAttributes includes the authorization attributes available for resource requests to the Authorizer interface", map[string]any{
			"fieldSelector": ref(a+"FieldSelectorAttributes", "fieldSelector describes the limitation on access based on field."),
			"group":         str("Group is the API Group of the Resource.  \"*\" means all."),
			"labelSelector": ref(a+"LabelSelectorAttributes", "labelSelector describes the limitation on access based on labels."),
			"name":          str("Name is the name of the resource being requested for a \"get\" or deleted for a \"delete\". \"\" (empty) means all."),
			"namespace":     str("Namespace is the namespace of the action being requested."),
			"resource":      str("Resource is one of the existing resource types.  \"*\" means all."),
			"subresource":   str("Subresource is one of the existing resource types.  \"\" means none."),
			"verb":          str("Verb is a kubernetes resource API verb, like: get, list, watch, create, update, delete, proxy.  \"*\" means all."),
			"version":       str("Version is the API Version of the Resource.  \"*\" means all."),
		}),
		a + "FieldSelectorAttributes": selector("field", "FieldSelectorRequirement", "FieldSelectorAttributes indicates a field limited access."),
		a + "LabelSelectorAttributes": selector("label", "LabelSelectorRequirement", "LabelSelectorAttributes indicates a label limited access."),
		a + "NonResourceAttributes": object("NonResourceAttributes includes the authorization attributes available for non-resource requests to the Authorizer interface", map[string]any{
			"path": str("Path is the URL path of the request"),
			"verb": str("Verb is the standard HTTP verb"),
		}),
		a + "SubjectAccessReviewStatus": object("SubjectAccessReviewStatus", map[string]any{
			"allowed":         boolean("Allowed is required. True if the action would be allowed, false otherwise."),
			"denied":          boolean("Denied is optional. True if the action would be denied, otherwise false."),
			"evaluationError": str("EvaluationError is an indication that some error occurred during the authorization check."),
			"reason":          str("Reason is optional.  It indicates why a request was allowed or denied."),
		}, "allowed"),
		a + "SelfSubjectRulesReviewSpec": object("SelfSubjectRulesReviewSpec defines the specification for SelfSubjectRulesReview.", map[string]any{
			"namespace": str("Namespace to evaluate rules for. Required."),
		}),
		a + "SubjectRulesReviewStatus": object("SubjectRulesReviewStatus contains the result of a rules check.", map[string]any{
			"evaluationError":  str("EvaluationError can appear in combination with Rules."),
			"incomplete":       boolean("Incomplete is true when the rules returned by this call are incomplete."),
			"nonResourceRules": with(arrayOf(refItem(a+"NonResourceRule"), "NonResourceRules is the list of actions the subject is allowed to perform on non-resources."), "x-kubernetes-list-type", "atomic"),
			"resourceRules":    with(arrayOf(refItem(a+"ResourceRule"), "ResourceRules is the list of actions the subject is allowed to perform on resources."), "x-kubernetes-list-type", "atomic"),
		}, "resourceRules", "nonResourceRules", "incomplete"),
		a + "ResourceRule": object("ResourceRule is the list of actions the subject is allowed to perform on resources.", map[string]any{
			"apiGroups":     strs("APIGroups is the name of the APIGroup that contains the resources."),
			"resourceNames": strs("ResourceNames is an optional white list of names that the rule applies to."),
			"resources":     strs("Resources is a list of resources this rule applies to."),
			"verbs":         strs("Verb is a list of kubernetes resource API verbs."),
		}, "verbs"),
		a + "NonResourceRule": object("NonResourceRule holds information that describes a rule for the non-resource", map[string]any{
			"nonResourceURLs": strs("NonResourceURLs is a set of partial urls that a user should have access to."),
			"verbs":           strs("Verb is a list of kubernetes non-resource API verbs."),
		}, "verbs"),
		metaPrefix + "FieldSelectorRequirement": object("FieldSelectorRequirement is a selector that contains values, a key, and an operator that relates the key and values.", map[string]any{
			"key":      str("key is the field selector key that the requirement applies to."),
			"operator": str("operator represents a key's relationship to a set of values. Valid operators are In, NotIn, Exists, DoesNotExist."),
			"values":   strs("values is an array of string values."),
		}, "key", "operator"),
		n + "SelfSubjectReview": kind(authenticationGroup, "v1", "SelfSubjectReview", "SelfSubjectReview contains the user information that the kube-apiserver has about the user making this request.", map[string]any{
			"status": ref(n+"SelfSubjectReviewStatus", "Status is filled in by the server with the user attributes."),
		}),
		n + "SelfSubjectReviewStatus": object("SelfSubjectReviewStatus is filled by the kube-apiserver and sent back to a user.", map[string]any{
			"userInfo": ref(n+"UserInfo", "User attributes of the user making this request."),
		}),
		n + "TokenReview": kind(authenticationGroup, "v1", "TokenReview", "TokenReview attempts to authenticate a token to a known user.", map[string]any{
			"spec":   ref(n+"TokenReviewSpec", "Spec holds information about the request being evaluated"),
			"status": ref(n+"TokenReviewStatus", "Status is filled in by the server and indicates whether the request can be authenticated."),
		}, "spec"),
		n + "TokenReviewSpec": object("TokenReviewSpec is a description of the token authentication request.", map[string]any{
			"audiences": strs("Audiences is a list of the identifiers that the resource server presented with the token identifies as."),
			"token":     str("Token is the opaque bearer token."),
		}),
		n + "TokenReviewStatus": object("TokenReviewStatus is the result of the token authentication request.", map[string]any{
			"audiences":     strs("Audiences are audience identifiers chosen by the authenticator that are compatible with both the TokenReview and token."),
			"authenticated": boolean("Authenticated indicates that the token was associated with a known user."),
			"error":         str("Error indicates that the token couldn't be checked"),
			"user":          ref(n+"UserInfo", "User is the UserInfo associated with the provided token."),
		}),
		n + "UserInfo": object("UserInfo holds the information about the user needed to implement the user.Info interface.", map[string]any{
			"extra":    extra("Any additional information provided by the authenticator."),
			"groups":   strs("The names of groups this user is a part of."),
			"uid":      str("A unique value that identifies this user across time."),
			"username": str("The name that uniquely identifies this user among all active users."),
		}),
	}
}
