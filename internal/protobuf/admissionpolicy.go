package protobuf

// admissionregistration/v1 messages of ValidatingAdmissionPolicy,
// MutatingAdmissionPolicy and their bindings (k8s.io/api admissionregistration/v1 generated.proto and
// types.go).
var (
	namedRule = &message{name: "NamedRuleWithOperations", fields: []field{
		{name: "resourceNames", num: 1, kind: kString, pres: repeated, omitZero: true},
		{name: "ruleWithOperations", num: 2, kind: kMessage, inline: true, msg: webhookRule},
	}}
	matchResources = &message{name: "MatchResources", fields: []field{
		{name: "namespaceSelector", num: 1, kind: kMessage, pres: pointer, msg: labelSelector},
		{name: "objectSelector", num: 2, kind: kMessage, pres: pointer, msg: labelSelector},
		{name: "resourceRules", num: 3, kind: kMessage, pres: repeated, omitZero: true, msg: namedRule},
		{name: "excludeResourceRules", num: 4, kind: kMessage, pres: repeated, omitZero: true, msg: namedRule},
		{name: "matchPolicy", num: 7, kind: kString, pres: pointer},
	}}
	paramKind = &message{name: "ParamKind", fields: []field{
		{name: "apiVersion", num: 1, kind: kString, omitZero: true},
		{name: "kind", num: 2, kind: kString, omitZero: true},
	}}
	paramRef = &message{name: "ParamRef", fields: []field{
		{name: "name", num: 1, kind: kString, omitZero: true},
		{name: "namespace", num: 2, kind: kString, omitZero: true},
		{name: "selector", num: 3, kind: kMessage, pres: pointer, msg: labelSelector},
		{name: "parameterNotFoundAction", num: 4, kind: kString, pres: pointer},
	}}
	policyVariable = &message{name: "Variable", fields: []field{
		{name: "name", num: 1, kind: kString},
		{name: "expression", num: 2, kind: kString},
	}}
	policyCondition = &message{name: "Condition", fields: []field{
		{name: "type", num: 1, kind: kString},
		{name: "status", num: 2, kind: kString},
		{name: "observedGeneration", num: 3, kind: kInt64, omitZero: true},
		{name: "lastTransitionTime", num: 4, kind: kTime},
		{name: "reason", num: 5, kind: kString},
		{name: "message", num: 6, kind: kString},
	}}
	validatingAdmissionPolicy = &message{name: "ValidatingAdmissionPolicy", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "spec", num: 2, kind: kMessage, msg: &message{name: "ValidatingAdmissionPolicySpec", fields: []field{
			{name: "paramKind", num: 1, kind: kMessage, pres: pointer, msg: paramKind},
			{name: "matchConstraints", num: 2, kind: kMessage, pres: pointer, msg: matchResources},
			{name: "validations", num: 3, kind: kMessage, pres: repeated, omitZero: true, msg: &message{name: "Validation", fields: []field{
				{name: "expression", num: 1, kind: kString},
				{name: "message", num: 2, kind: kString, omitZero: true},
				{name: "reason", num: 3, kind: kString, pres: pointer},
				{name: "messageExpression", num: 4, kind: kString, omitZero: true},
			}}},
			{name: "failurePolicy", num: 4, kind: kString, pres: pointer},
			{name: "auditAnnotations", num: 5, kind: kMessage, pres: repeated, omitZero: true, msg: &message{name: "AuditAnnotation", fields: []field{
				{name: "key", num: 1, kind: kString},
				{name: "valueExpression", num: 2, kind: kString},
			}}},
			{name: "matchConditions", num: 6, kind: kMessage, pres: repeated, omitZero: true, msg: matchCondition},
			{name: "variables", num: 7, kind: kMessage, pres: repeated, omitZero: true, msg: policyVariable},
		}}},
		{name: "status", num: 3, kind: kMessage, msg: &message{name: "ValidatingAdmissionPolicyStatus", fields: []field{
			{name: "observedGeneration", num: 1, kind: kInt64, omitZero: true},
			{name: "typeChecking", num: 2, kind: kMessage, pres: pointer, msg: &message{name: "TypeChecking", fields: []field{
				{name: "expressionWarnings", num: 1, kind: kMessage, pres: repeated, omitZero: true, msg: &message{name: "ExpressionWarning", fields: []field{
					{name: "fieldRef", num: 2, kind: kString},
					{name: "warning", num: 3, kind: kString},
				}}},
			}}},
			{name: "conditions", num: 3, kind: kMessage, pres: repeated, omitZero: true, msg: policyCondition},
		}}},
	}}
	validatingAdmissionPolicyBinding = &message{name: "ValidatingAdmissionPolicyBinding", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "spec", num: 2, kind: kMessage, msg: &message{name: "ValidatingAdmissionPolicyBindingSpec", fields: []field{
			{name: "policyName", num: 1, kind: kString, omitZero: true},
			{name: "paramRef", num: 2, kind: kMessage, pres: pointer, msg: paramRef},
			{name: "matchResources", num: 3, kind: kMessage, pres: pointer, msg: matchResources},
			{name: "validationActions", num: 4, kind: kString, pres: repeated, omitZero: true},
		}}},
	}}
	expressionOnly = func(name string) *message {
		return &message{name: name, fields: []field{{name: "expression", num: 1, kind: kString, omitZero: true}}}
	}
	mutatingAdmissionPolicy = &message{name: "MutatingAdmissionPolicy", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "spec", num: 2, kind: kMessage, msg: &message{name: "MutatingAdmissionPolicySpec", fields: []field{
			{name: "paramKind", num: 1, kind: kMessage, pres: pointer, msg: paramKind},
			{name: "matchConstraints", num: 2, kind: kMessage, pres: pointer, msg: matchResources},
			{name: "variables", num: 3, kind: kMessage, pres: repeated, omitZero: true, msg: policyVariable},
			{name: "mutations", num: 4, kind: kMessage, pres: repeated, omitZero: true, msg: &message{name: "Mutation", fields: []field{
				{name: "patchType", num: 2, kind: kString},
				{name: "applyConfiguration", num: 3, kind: kMessage, pres: pointer, msg: expressionOnly("ApplyConfiguration")},
				{name: "jsonPatch", num: 4, kind: kMessage, pres: pointer, msg: expressionOnly("JSONPatch")},
			}}},
			{name: "failurePolicy", num: 5, kind: kString, pres: pointer},
			{name: "matchConditions", num: 6, kind: kMessage, pres: repeated, omitZero: true, msg: matchCondition},
			{name: "reinvocationPolicy", num: 7, kind: kString, omitZero: true},
		}}},
	}}
	mutatingAdmissionPolicyBinding = &message{name: "MutatingAdmissionPolicyBinding", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "spec", num: 2, kind: kMessage, msg: &message{name: "MutatingAdmissionPolicyBindingSpec", fields: []field{
			{name: "policyName", num: 1, kind: kString, omitZero: true},
			{name: "paramRef", num: 2, kind: kMessage, pres: pointer, msg: paramRef},
			{name: "matchResources", num: 3, kind: kMessage, pres: pointer, msg: matchResources},
		}}},
	}}
)
