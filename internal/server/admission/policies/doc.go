// Package policies evaluates admissionregistration.k8s.io/v1
// ValidatingAdmissionPolicies on writes as kube-apiserver's
// ValidatingAdmissionPolicy plugin does (k8s.io/apiserver/pkg/admission/
// plugin/policy/validating): which policies and bindings a write reaches
// (matchConstraints and matchResources: rules, excluded rules, resource
// names, namespace and object selectors, matchPolicy Equivalent), their
// params (paramKind and paramRef: by name or selector, in the request's
// namespace or the one named, parameterNotFoundAction), matchConditions,
// variables, validations with message, messageExpression and reason, and
// auditAnnotations, in CEL under kube's cost limits; then what each
// binding's validationActions make of a failure: Deny (kube's Status, its
// code from the reason), Warn (a warning) or Audit (the
// validation.policy.admission.k8s.io/validation_failure annotation), and
// failurePolicy of configuration and evaluation errors.
//
// # Caveats
//
// Objects, params and the request are dynamically typed in CEL: a type
// error kube's type checking would find at creation shows when the
// expression runs. Variables are evaluated before the validations, not
// when first read (their errors still surface only where read). The
// authorizer variable is not declared: an expression using it does not
// compile.
//
// # Concurrency
//
// A Validator is safe for concurrent use; compiled policies are shared
// and read-only.
package policies
