package protobuf

import "google.golang.org/protobuf/encoding/protowire"

// admissionregistration/v1 messages (k8s.io/api admissionregistration/v1
// generated.proto and types.go): the webhook configurations. Their
// WebhookClientConfig has the fields and numbers of apiextensions/v1's.
var (
	webhookRule = &message{name: "RuleWithOperations", fields: []field{
		{name: "operations", num: 1, kind: kString, pres: repeated, omitZero: true},
		{name: "rule", num: 2, kind: kMessage, inline: true, msg: &message{name: "Rule", fields: []field{
			{name: "apiGroups", num: 1, kind: kString, pres: repeated, omitZero: true},
			{name: "apiVersions", num: 2, kind: kString, pres: repeated, omitZero: true},
			{name: "resources", num: 3, kind: kString, pres: repeated, omitZero: true},
			{name: "scope", num: 4, kind: kString, pres: pointer},
		}}},
	}}
	matchCondition = &message{name: "MatchCondition", fields: []field{
		{name: "name", num: 1, kind: kString},
		{name: "expression", num: 2, kind: kString},
	}}
	mutatingWebhookConfiguration = &message{name: "MutatingWebhookConfiguration", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "webhooks", num: 2, kind: kMessage, pres: repeated, omitZero: true, msg: webhook("MutatingWebhook", true)},
	}}
	validatingWebhookConfiguration = &message{name: "ValidatingWebhookConfiguration", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "webhooks", num: 2, kind: kMessage, pres: repeated, omitZero: true, msg: webhook("ValidatingWebhook", false)},
	}}
)

// webhook is MutatingWebhook or ValidatingWebhook: the same fields, the
// mutating one with reinvocationPolicy, numbered apart from objectSelector on.
func webhook(name string, mutating bool) *message {
	var objectSelector, matchConditions protowire.Number = 10, 11
	if mutating {
		objectSelector, matchConditions = 11, 12
	}
	fields := []field{
		{name: "name", num: 1, kind: kString},
		{name: "clientConfig", num: 2, kind: kMessage, msg: webhookClientConfig},
		{name: "rules", num: 3, kind: kMessage, pres: repeated, omitZero: true, msg: webhookRule},
		{name: "failurePolicy", num: 4, kind: kString, pres: pointer},
		{name: "namespaceSelector", num: 5, kind: kMessage, pres: pointer, msg: labelSelector},
		{name: "sideEffects", num: 6, kind: kString, pres: pointer, null: true},
		{name: "timeoutSeconds", num: 7, kind: kInt32, pres: pointer},
		{name: "admissionReviewVersions", num: 8, kind: kString, pres: repeated},
		{name: "matchPolicy", num: 9, kind: kString, pres: pointer},
	}
	if mutating {
		fields = append(fields, field{name: "reinvocationPolicy", num: 10, kind: kString, pres: pointer})
	}
	fields = append(fields,
		field{name: "objectSelector", num: objectSelector, kind: kMessage, pres: pointer, msg: labelSelector},
		field{name: "matchConditions", num: matchConditions, kind: kMessage, pres: repeated, omitZero: true, msg: matchCondition})
	return &message{name: name, fields: fields}
}
