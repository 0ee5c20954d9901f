package resource

// admissionPolicyDefinitions are the schemas of ValidatingAdmissionPolicy,
// MutatingAdmissionPolicy and their bindings (k8s.io/api admissionregistration/v1), with kube's list
// and map extensions; descriptions are the first sentence of kube's.
func admissionPolicyDefinitions() map[string]map[string]any {
	p := admissionPrefix
	atomicList := func(items map[string]any, desc string) map[string]any {
		return with(arrayOf(items, desc), "x-kubernetes-list-type", "atomic")
	}
	atomicObject := func(desc string, props map[string]any, required ...string) map[string]any {
		return with(object(desc, props, required...), "x-kubernetes-map-type", "atomic")
	}
	return map[string]map[string]any{
		p + "ValidatingAdmissionPolicy": kind(AdmissionGroup, "v1", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy describes the definition of an admission validation policy that accepts or rejects an object without changing it.", map[string]any{
			"spec":   ref(p+"ValidatingAdmissionPolicySpec", "Specification of the desired behavior of the ValidatingAdmissionPolicy."),
			"status": ref(p+"ValidatingAdmissionPolicyStatus", "The status of the ValidatingAdmissionPolicy, including warnings that are useful to determine if the policy behaves in the expected way."),
		}),
		p + "ValidatingAdmissionPolicyBinding": kind(AdmissionGroup, "v1", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding binds the ValidatingAdmissionPolicy with paramerized resources.", map[string]any{
			"spec": ref(p+"ValidatingAdmissionPolicyBindingSpec", "Specification of the desired behavior of the ValidatingAdmissionPolicyBinding."),
		}),
		p + "ValidatingAdmissionPolicySpec": object("ValidatingAdmissionPolicySpec is the specification of the desired behavior of the AdmissionPolicy.", map[string]any{
			"auditAnnotations": atomicList(refItem(p+"AuditAnnotation"), "auditAnnotations contains CEL expressions which are used to produce audit annotations for the audit event of the API request."),
			"failurePolicy":    str("failurePolicy defines how to handle failures for the admission policy. Allowed values are Ignore or Fail. Defaults to Fail."),
			"matchConditions": with(arrayOf(refItem(p+"MatchCondition"), "MatchConditions is a list of conditions that must be met for a request to be validated."),
				"x-kubernetes-patch-merge-key", "name", "x-kubernetes-patch-strategy", "merge", "x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"name"}),
			"matchConstraints": ref(p+"MatchResources", "MatchConstraints specifies what resources this policy is designed to validate."),
			"paramKind":        ref(p+"ParamKind", "ParamKind specifies the kind of resources used to parameterize this policy."),
			"validations":      atomicList(refItem(p+"Validation"), "Validations contain CEL expressions which is used to apply the validation."),
			"variables":        atomicList(refItem(p+"Variable"), "Variables contain definitions of variables that can be used in composition of other expressions."),
		}),
		p + "ValidatingAdmissionPolicyStatus": object("ValidatingAdmissionPolicyStatus represents the status of an admission validation policy.", map[string]any{
			"conditions": with(arrayOf(object("Condition contains details for one aspect of the current state of this API Resource.", map[string]any{
				"lastTransitionTime": typed("string", "date-time", "lastTransitionTime is the last time the condition transitioned from one status to another."),
				"message":            str("message is a human readable message indicating details about the transition."),
				"observedGeneration": int64f("observedGeneration represents the .metadata.generation that the condition was set based upon."),
				"reason":             str("reason contains a programmatic identifier indicating the reason for the condition's last transition."),
				"status":             str("status of the condition, one of True, False, Unknown."),
				"type":               str("type of condition in CamelCase or in foo.example.com/CamelCase."),
			}, "type", "status", "lastTransitionTime", "reason", "message"), "The conditions represent the latest available observations of a policy's current state."),
				"x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"type"}),
			"observedGeneration": int64f("The generation observed by the controller."),
			"typeChecking":       ref(p+"TypeChecking", "The results of type checking for each expression."),
		}),
		p + "TypeChecking": object("TypeChecking contains results of type checking the expressions in the ValidatingAdmissionPolicy", map[string]any{
			"expressionWarnings": atomicList(refItem(p+"ExpressionWarning"), "The type checking warnings for each expression."),
		}),
		p + "ExpressionWarning": object("ExpressionWarning is a warning information that targets a specific expression.", map[string]any{
			"fieldRef": str("The path to the field that refers the expression."),
			"warning":  str("The content of type checking information in a human-readable form."),
		}, "fieldRef", "warning"),
		p + "ValidatingAdmissionPolicyBindingSpec": object("ValidatingAdmissionPolicyBindingSpec is the specification of the ValidatingAdmissionPolicyBinding.", map[string]any{
			"matchResources":    ref(p+"MatchResources", "MatchResources declares what resources match this binding and will be validated by it."),
			"paramRef":          ref(p+"ParamRef", "paramRef specifies the parameter resource used to configure the admission control policy."),
			"policyName":        str("PolicyName references a ValidatingAdmissionPolicy name which the ValidatingAdmissionPolicyBinding binds to."),
			"validationActions": with(arrayOf(str(""), "validationActions declares how Validations of the referenced ValidatingAdmissionPolicy are enforced."), "x-kubernetes-list-type", "set"),
		}),
		p + "ParamKind": atomicObject("ParamKind is a tuple of Group Kind and Version.", map[string]any{
			"apiVersion": str("APIVersion is the API group version the resources belong to."),
			"kind":       str("Kind is the API kind the resources belong to. Required."),
		}),
		p + "ParamRef": atomicObject("ParamRef describes how to locate the params to be used as input to expressions of rules applied by a policy binding.", map[string]any{
			"name":                    str("name is the name of the resource being referenced."),
			"namespace":               str("namespace is the namespace of the referenced resource."),
			"parameterNotFoundAction": str("`parameterNotFoundAction` controls the behavior of the binding when the resource exists, and name or selector is valid, but there are no parameters matched by the binding."),
			"selector":                ref(metaPrefix+"LabelSelector", "selector can be used to match multiple param objects based on their labels."),
		}),
		p + "MatchResources": atomicObject("MatchResources decides whether to run the admission control policy on an object based on whether it meets the match criteria.", map[string]any{
			"excludeResourceRules": atomicList(refItem(p+"NamedRuleWithOperations"), "ExcludeResourceRules describes what operations on what resources/subresources the ValidatingAdmissionPolicy should not care about."),
			"matchPolicy":          str("matchPolicy defines how the \"MatchResources\" list is used to match incoming requests. Allowed values are \"Exact\" or \"Equivalent\"."),
			"namespaceSelector":    ref(metaPrefix+"LabelSelector", "NamespaceSelector decides whether to run the admission control policy on an object based on whether the namespace for that object matches the selector."),
			"objectSelector":       ref(metaPrefix+"LabelSelector", "ObjectSelector decides whether to run the validation based on if the object has matching labels."),
			"resourceRules":        atomicList(refItem(p+"NamedRuleWithOperations"), "ResourceRules describes what operations on what resources/subresources the ValidatingAdmissionPolicy matches."),
		}),
		p + "NamedRuleWithOperations": atomicObject("NamedRuleWithOperations is a tuple of Operations and Resources with ResourceNames.", map[string]any{
			"apiGroups":     atomicList(str(""), "APIGroups is the API groups the resources belong to. '*' is all groups."),
			"apiVersions":   atomicList(str(""), "APIVersions is the API versions the resources belong to. '*' is all versions."),
			"operations":    atomicList(str(""), "Operations is the operations the admission hook cares about - CREATE, UPDATE, DELETE, CONNECT or * for all of those operations and any future admission operations that are added."),
			"resourceNames": atomicList(str(""), "ResourceNames is an optional white list of names that the rule applies to."),
			"resources":     atomicList(str(""), "Resources is a list of resources this rule applies to."),
			"scope":         str("scope specifies the scope of this rule. Valid values are \"Cluster\", \"Namespaced\", and \"*\"."),
		}),
		p + "Validation": object("Validation specifies the CEL expression which is used to apply the validation.", map[string]any{
			"expression":        str("Expression represents the expression which will be evaluated by CEL."),
			"message":           str("Message represents the message displayed when validation fails."),
			"messageExpression": str("messageExpression declares a CEL expression that evaluates to the validation failure message that is returned when this rule fails."),
			"reason":            str("Reason represents a machine-readable description of why this validation failed."),
		}, "expression"),
		p + "AuditAnnotation": object("AuditAnnotation describes how to produce an audit annotation for an API request.", map[string]any{
			"key":             str("key specifies the audit annotation key."),
			"valueExpression": str("valueExpression represents the expression which is evaluated by CEL to produce an audit annotation value."),
		}, "key", "valueExpression"),
		p + "Variable": object("Variable is the definition of a variable that is used for composition.", map[string]any{
			"expression": str("Expression is the expression that will be evaluated as the value of the variable."),
			"name":       str("Name is the name of the variable."),
		}, "name", "expression"),
		p + "MutatingAdmissionPolicy": kind(AdmissionGroup, "v1", "MutatingAdmissionPolicy", "MutatingAdmissionPolicy describes the definition of an admission mutation policy that mutates the object coming into admission chain.", map[string]any{
			"spec": ref(p+"MutatingAdmissionPolicySpec", "spec defines the desired behavior of the MutatingAdmissionPolicy."),
		}),
		p + "MutatingAdmissionPolicyBinding": kind(AdmissionGroup, "v1", "MutatingAdmissionPolicyBinding", "MutatingAdmissionPolicyBinding binds the MutatingAdmissionPolicy with parametrized resources.", map[string]any{
			"spec": ref(p+"MutatingAdmissionPolicyBindingSpec", "spec defines the desired behavior of the MutatingAdmissionPolicyBinding."),
		}),
		p + "MutatingAdmissionPolicySpec": object("MutatingAdmissionPolicySpec defines the desired behavior of the admission policy.", map[string]any{
			"failurePolicy": str("failurePolicy defines how to handle failures for the admission policy."),
			"matchConditions": with(arrayOf(refItem(p+"MatchCondition"), "matchConditions is a list of conditions that must be met for a request to be validated."),
				"x-kubernetes-patch-merge-key", "name", "x-kubernetes-patch-strategy", "merge", "x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"name"}),
			"matchConstraints":   ref(p+"MatchResources", "matchConstraints specifies what resources this policy is designed to validate."),
			"mutations":          atomicList(refItem(p+"Mutation"), "mutations contain operations to perform on matching objects."),
			"paramKind":          ref(p+"ParamKind", "paramKind specifies the kind of resources used to parameterize this policy."),
			"reinvocationPolicy": str("reinvocationPolicy indicates whether mutations may be called multiple times per MutatingAdmissionPolicyBinding as part of a single admission evaluation."),
			"variables":          atomicList(refItem(p+"Variable"), "variables contain definitions of variables that can be used in composition of other expressions."),
		}),
		p + "Mutation": object("Mutation specifies the CEL expression which is used to apply the Mutation.", map[string]any{
			"applyConfiguration": ref(p+"ApplyConfiguration", "applyConfiguration defines the desired configuration values of an object."),
			"jsonPatch":          ref(p+"JSONPatch", "jsonPatch defines a [JSON patch](https://jsonpatch.com/) operation to perform a mutation to the object."),
			"patchType":          str("patchType indicates the patch strategy used."),
		}, "patchType"),
		p + "ApplyConfiguration": object("ApplyConfiguration defines the desired configuration values of an object.", map[string]any{
			"expression": str("expression will be evaluated by CEL to create an apply configuration."),
		}),
		p + "JSONPatch": object("JSONPatch defines a JSON Patch.", map[string]any{
			"expression": str("expression will be evaluated by CEL to create a [JSON patch](https://jsonpatch.com/)."),
		}),
		p + "MutatingAdmissionPolicyBindingSpec": object("MutatingAdmissionPolicyBindingSpec defines the specification of the MutatingAdmissionPolicyBinding.", map[string]any{
			"matchResources": ref(p+"MatchResources", "matchResources limits what resources match this binding and may be mutated by it."),
			"paramRef":       ref(p+"ParamRef", "paramRef specifies the parameter resource used to configure the admission control policy."),
			"policyName":     str("policyName references a MutatingAdmissionPolicy name which the MutatingAdmissionPolicyBinding binds to."),
		}),
	}
}
