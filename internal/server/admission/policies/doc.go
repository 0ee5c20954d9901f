// Package policies evaluates admissionregistration.k8s.io/v1
// ValidatingAdmissionPolicies and MutatingAdmissionPolicies on writes as
// kube-apiserver's plugins do (k8s.io/apiserver/pkg/admission/plugin/
// policy/validating and .../mutating, over .../generic).
//
// Both kinds share which policies and bindings a write reaches
// (matchConstraints and matchResources: rules, excluded rules, resource
// names, namespace and object selectors, matchPolicy Equivalent), their
// params (paramKind and paramRef: by name or selector, in the request's
// namespace or the one named, parameterNotFoundAction), matchConditions
// (one 2.5M cost budget for all of a policy's) and variables, evaluated
// when an expression first reads them, once per activation, as kube's
// composition context.
//
// A Validator then evaluates validations with message, messageExpression
// and reason, and auditAnnotations, under kube's cost limits; each
// binding's validationActions make of a failure a Deny (kube's Status, its
// code from the reason), a Warn (a warning) or an Audit (the
// validation.policy.admission.k8s.io/validation_failure annotation).
//
// A Mutator applies mutations in order, each with kube's full budget: an
// ApplyConfiguration (a CEL Object{...}, in kube's Object types whose
// names follow their paths) merged as server-side apply merges, without
// field ownership, refusing atomic lists and nulls as kube does; a
// JSONPatch (a CEL list of JSONPatch{op, path, from, value}) applied
// within a client's JSON patch bounds, a failed test leaving the object
// as it was. A policy with reinvocationPolicy IfNeeded is run again when a
// later mutation (a policy's or a webhook's) changed the object (see
// webhook.MutateChain). Deletes are not mutated.
//
// failurePolicy decides what configuration and evaluation errors do.
//
// Every expression but a messageExpression may use kube's authorizer
// variables (authorizer, authorizer.requestResource): their checks ask the
// server's authorizer (RBAC) about the requesting user, as kube's do.
//
// An Observer counts the checks as kube's dispatchers do (its
// apiserver_validating_admission_policy_check_total and
// apiserver_mutating_admission_policy_check_total, with durations): a
// failed validation once per enforcement action of its binding, an
// evaluation error ignored under failurePolicy Ignore as allow, and every
// mutation; a validation that holds is not counted.
//
// # Caveats
//
// Objects, params and the request are dynamically typed in CEL: a type
// error kube's type checking would find at creation shows when the
// expression runs. TypeCheck, which writes status.typeChecking, types
// object and oldObject by the schemas of the kinds a policy names (a
// custom resource's, its metadata dynamic; a built-in kind's published
// one, its untyped fields dynamic), and leaves params, request,
// namespaceObject and variables dynamic: it reports some of kube's
// issues, never others.
// kube evaluates mutating policies in no fixed
// order (a map's); here they run in name order. An apply configuration
// merges by the server's merge schemas (those of server-side apply),
// which know fewer list types than kube's OpenAPI models.
//
// # Concurrency
//
// A Validator and a Mutator are safe for concurrent use; compiled
// policies are shared and read-only.
package policies
