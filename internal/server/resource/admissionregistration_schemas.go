package resource

const admissionPrefix = "io.k8s.api.admissionregistration.v1."

// admissionregistrationDefinitions are the schemas of the webhook
// configurations of admissionregistration.k8s.io/v1 (k8s.io/api
// admissionregistration/v1), with kube's patch and list extensions.
func admissionregistrationDefinitions() map[string]map[string]any {
	p := admissionPrefix
	atomicList := func(items map[string]any, desc string) map[string]any {
		return with(arrayOf(items, desc), "x-kubernetes-list-type", "atomic")
	}
	webhooks := func(item, desc string) map[string]any {
		return with(arrayOf(refItem(p+item), desc), "x-kubernetes-patch-merge-key", "name", "x-kubernetes-patch-strategy", "merge",
			"x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"name"})
	}
	webhook := func(desc string, mutating bool) map[string]any {
		props := map[string]any{
			"admissionReviewVersions": atomicList(str(""), "AdmissionReviewVersions is an ordered list of preferred `AdmissionReview` versions the Webhook expects."),
			"clientConfig":            ref(p+"WebhookClientConfig", "ClientConfig defines how to communicate with the hook. Required"),
			"failurePolicy":           str("FailurePolicy defines how unrecognized errors from the admission endpoint are handled - allowed values are Ignore or Fail. Defaults to Fail."),
			"matchConditions": with(arrayOf(refItem(p+"MatchCondition"), "MatchConditions is a list of conditions that must be met for a request to be sent to this webhook."),
				"x-kubernetes-patch-merge-key", "name", "x-kubernetes-patch-strategy", "merge", "x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"name"}),
			"matchPolicy":       str("matchPolicy defines how the \"rules\" list is used to match incoming requests. Allowed values are \"Exact\" or \"Equivalent\"."),
			"name":              str("The name of the admission webhook. Name should be fully qualified, e.g., imagepolicy.kubernetes.io."),
			"namespaceSelector": ref(metaPrefix+"LabelSelector", "NamespaceSelector decides whether to run the webhook on an object based on whether the namespace for that object matches the selector."),
			"objectSelector":    ref(metaPrefix+"LabelSelector", "ObjectSelector decides whether to run the webhook based on if the object has matching labels."),
			"rules":             atomicList(refItem(p+"RuleWithOperations"), "Rules describes what operations on what resources/subresources the webhook cares about."),
			"sideEffects":       str("SideEffects states whether this webhook has side effects. Acceptable values are: None, NoneOnDryRun."),
			"timeoutSeconds":    int32f("TimeoutSeconds specifies the timeout for this webhook. Default to 10 seconds."),
		}
		if mutating {
			props["reinvocationPolicy"] = str("reinvocationPolicy indicates whether this webhook should be called multiple times as part of a single admission evaluation. Allowed values are \"Never\" and \"IfNeeded\".")
		}
		return object(desc, props, "name", "clientConfig", "sideEffects", "admissionReviewVersions")
	}
	return map[string]map[string]any{
		p + "MutatingWebhookConfiguration": kind(AdmissionGroup, "v1", "MutatingWebhookConfiguration", "MutatingWebhookConfiguration describes the configuration of and admission webhook that accept or reject and may change the object.", map[string]any{
			"webhooks": webhooks("MutatingWebhook", "Webhooks is a list of webhooks and the affected resources and operations."),
		}),
		p + "ValidatingWebhookConfiguration": kind(AdmissionGroup, "v1", "ValidatingWebhookConfiguration", "ValidatingWebhookConfiguration describes the configuration of and admission webhook that accept or reject and object without changing it.", map[string]any{
			"webhooks": webhooks("ValidatingWebhook", "Webhooks is a list of webhooks and the affected resources and operations."),
		}),
		p + "MutatingWebhook":   webhook("MutatingWebhook describes an admission webhook and the resources and operations it applies to.", true),
		p + "ValidatingWebhook": webhook("ValidatingWebhook describes an admission webhook and the resources and operations it applies to.", false),
		p + "RuleWithOperations": object("RuleWithOperations is a tuple of Operations and Resources.", map[string]any{
			"apiGroups":   atomicList(str(""), "APIGroups is the API groups the resources belong to. '*' is all groups."),
			"apiVersions": atomicList(str(""), "APIVersions is the API versions the resources belong to. '*' is all versions."),
			"operations":  atomicList(str(""), "Operations is the operations the admission hook cares about - CREATE, UPDATE, DELETE, CONNECT or * for all of those operations and any future admission operations that are added."),
			"resources":   atomicList(str(""), "Resources is a list of resources this rule applies to."),
			"scope":       str("scope specifies the scope of this rule. Valid values are \"Cluster\", \"Namespaced\", and \"*\"."),
		}),
		p + "WebhookClientConfig": object("WebhookClientConfig contains the information to make a TLS connection with the webhook", map[string]any{
			"caBundle": typed("string", "byte", "`caBundle` is a PEM encoded CA bundle which will be used to validate the webhook's server certificate."),
			"service":  ref(p+"ServiceReference", "`service` is a reference to the service for this webhook. Either `service` or `url` must be specified."),
			"url":      str("`url` gives the location of the webhook, in standard URL form (`scheme://host:port/path`). Exactly one of `url` or `service` must be specified."),
		}),
		p + "ServiceReference": object("ServiceReference holds a reference to Service.legacy.k8s.io", map[string]any{
			"name":      str("`name` is the name of the service. Required"),
			"namespace": str("`namespace` is the namespace of the service. Required"),
			"path":      str("`path` is an optional URL path which will be sent in any request to this service."),
			"port":      int32f("If specified, the port on the service that hosting webhook. Default to 443 for backward compatibility."),
		}, "namespace", "name"),
		p + "MatchCondition": object("MatchCondition represents a condition which must by fulfilled for a request to be sent to a webhook.", map[string]any{
			"expression": str("Expression represents the expression which will be evaluated by CEL. Must evaluate to bool."),
			"name":       str("Name is an identifier for this match condition, used for strategic merging of MatchConditions, as well as providing an identifier for logging purposes."),
		}, "name", "expression"),
	}
}
