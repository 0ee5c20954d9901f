package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/selector"
)

// Source gives the policies in force with their bindings, namespaces and
// params, from the server's caches.
type Source interface {
	// Policies returns the compiled policies, each with its bindings.
	Policies(ctx context.Context) ([]*Policy, error)
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
	// Namespace returns a namespace, or an error (404 when there is none).
	Namespace(ctx context.Context, name string) (api.Object, error)
	Equivalents(r webhook.GVR, subresource string) []webhook.Equivalent
	// ParamScope says whether the kind of apiVersion is served and
	// namespaced.
	ParamScope(apiVersion, kind string) (namespaced, served bool)
	// Params returns the objects of a kind in namespace ("" for a
	// cluster-scoped kind): the one named name (none if it does not
	// exist), else those sel selects.
	Params(ctx context.Context, apiVersion, kind, namespace, name string, sel selector.Labels) ([]api.Object, error)
}

// Validator evaluates the policies of its Source on writes.
type Validator struct{ source Source }

// New returns a Validator of source's policies.
func New(source Source) *Validator { return &Validator{source: source} }

// Any says whether there are policies (errors read as yes: Validate then
// reports them), so that a write without them skips preparing attributes.
func (v *Validator) Any(ctx context.Context) bool {
	ps, err := v.source.Policies(ctx)
	return err != nil || len(ps) > 0
}

// denial is a validation that failed under a binding with action Deny, or
// a configuration error under failurePolicy Fail.
type denial struct {
	policy  string
	binding string // "" for a policy's own configuration error
	message string
	reason  api.StatusReason
}

// failureValue is the JSON of one failure in kube's
// validation.policy.admission.k8s.io/validation_failure audit annotation.
type failureValue struct {
	Message           string   `json:"message"`
	Policy            string   `json:"policy"`
	Binding           string   `json:"binding"`
	ExpressionIndex   int      `json:"expressionIndex"`
	ValidationActions []string `json:"validationActions"`
}

const validationFailureKey = "validation.policy.admission.k8s.io/validation_failure"

// Validate evaluates every policy whose matchConstraints match the write,
// under each of its bindings that match it too, with each of the
// binding's params, as kube's ValidatingAdmissionPolicy plugin: a failed
// validation is denied, warned or audited by the binding's
// validationActions. It returns the first denial as kube's Status.
func (v *Validator) Validate(ctx context.Context, a *webhook.Attributes) error {
	if webhook.Exempt(a) {
		return nil
	}
	policies, err := v.source.Policies(ctx)
	if err != nil || len(policies) == 0 {
		return err
	}
	var denied []denial
	var failures []failureValue
	configError := func(p *Policy, b *Binding, err error) {
		if p.ignore {
			return
		}
		d := denial{policy: p.Name, message: "failed to configure policy: " + err.Error()}
		if b != nil {
			d.binding, d.message = b.Name, "failed to configure binding: "+err.Error()
		}
		denied = append(denied, d)
	}
	// What every policy reads of the write, converted for CEL once per
	// view of it (the request's own, or through an equivalent resource).
	inputs := map[*webhook.Attributes]map[string]any{}
	var ns any
	input := func(inv *webhook.Attributes) (map[string]any, error) {
		if in := inputs[inv]; in != nil {
			return in, nil
		}
		if ns == nil {
			ns = types.NullValue
			if a.Namespace != "" && !(a.Kind == webhook.GVK{Version: "v1", Kind: "Namespace"}) {
				obj, err := v.source.Namespace(ctx, a.Namespace)
				if err != nil {
					return nil, apierror.From(err)
				}
				ns = namespaceObject(obj)
			}
		}
		in := map[string]any{
			"object":          orNull(inv.Object),
			"oldObject":       orNull(inv.OldObject),
			"request":         webhook.CELValue(webhook.RequestMap(inv)),
			"namespaceObject": ns,
		}
		inputs[inv] = in
		return in, nil
	}
	for _, p := range policies {
		inv, err := v.matches(ctx, p.match, a)
		if err != nil {
			configError(p, nil, err)
			continue
		}
		if inv == nil {
			continue
		}
		if p.configErr != nil {
			configError(p, nil, p.configErr)
			continue
		}
		annotations := map[string][]string{}
		for _, b := range p.Bindings {
			if b.configErr != nil {
				configError(p, b, b.configErr)
				continue
			}
			if b.match != nil {
				m, err := v.matches(ctx, b.match, a)
				if err != nil {
					configError(p, b, err)
					continue
				}
				if m == nil {
					continue
				}
			}
			params, err := v.params(ctx, p, b, a.Namespace)
			if err != nil {
				configError(p, b, err)
				continue
			}
			in, err := input(inv)
			if err != nil {
				return err
			}
			for _, param := range params {
				res := p.evaluate(ctx, in, param)
				for i, d := range res.decisions {
					if !d.deny {
						continue
					}
					if b.deny {
						denied = append(denied, denial{policy: p.Name, binding: b.Name, message: d.message, reason: d.reason})
					}
					if b.audit {
						failures = append(failures, failureValue{Message: d.message, Policy: p.Name, Binding: b.Name, ExpressionIndex: i, ValidationActions: b.actions})
					}
					if b.warn {
						a.Warn(fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.Name, b.Name, d.message))
					}
				}
				for _, an := range res.annotations {
					switch {
					case an.err != "":
						denied = append(denied, denial{policy: p.Name, binding: b.Name, message: an.err})
					case an.value != "" && !containsString(annotations[an.key], an.value):
						annotations[an.key] = append(annotations[an.key], an.value)
					}
				}
			}
		}
		for k, vals := range annotations {
			a.Annotate(p.Name+"/"+k, strings.Join(vals, ", "))
		}
	}
	if len(failures) > 0 {
		if len(failures) > maxValidationFailure {
			failures = failures[:maxValidationFailure]
		}
		if b, err := json.Marshal(failures); err == nil {
			a.Annotate(validationFailureKey, string(b))
		}
	}
	if len(denied) == 0 {
		return nil
	}
	return denialError(a, denied[0])
}

func containsString(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// denialError is kube's: admission.NewForbidden's message, with the
// validation's reason (Invalid by default) and its code, and the message
// once more as a cause.
func denialError(a *webhook.Attributes, d denial) error {
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", d.policy, d.message)
	if d.binding != "" {
		msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.policy, d.binding, d.message)
	}
	name := a.Name
	if name == "" && a.Object != nil {
		name = a.Object.Name()
	}
	err := apierror.ForbiddenTo(apierror.Target{Group: a.Resource.Group, Resource: a.Resource.Resource, Name: name}, msg)
	reason := d.reason
	if reason == "" {
		reason = api.StatusReasonInvalid
	}
	err.Status.Reason = reason
	err.Status.Code = reasonCode(reason)
	err.Status.Details.Causes = append(err.Status.Details.Causes, api.StatusCause{Message: msg})
	return err
}

// reasonCode is kube's reasonToCode.
func reasonCode(r api.StatusReason) int32 {
	switch r {
	case api.StatusReasonForbidden:
		return http.StatusForbidden
	case api.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case api.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusUnprocessableEntity
}

// matches is kube's policy Matcher.Matches: the namespace and object
// selectors, the excluded rules, then the rules (through an equivalent
// resource under matchPolicy Equivalent; no rules match everything). It
// returns the attributes the policy sees (a, or its view through the
// equivalent resource), nil when it does not match. Selector errors
// matter only when the rules match.
func (v *Validator) matches(ctx context.Context, m *matchResources, a *webhook.Attributes) (*webhook.Attributes, error) {
	nsMatch, nsErr := webhook.MatchNamespace(ctx, v.source.NamespaceLabels, m.namespaceSelector, a)
	if nsErr == nil && !nsMatch {
		return nil, nil
	}
	if !m.objectSelector.Empty() && !webhook.Selects(m.objectSelector, a.Object) && !webhook.Selects(m.objectSelector, a.OldObject) {
		return nil, nil
	}
	excluded, err := v.matchRules(ctx, m.exclude, m.equivalent, a)
	if err != nil || excluded != nil {
		return nil, err
	}
	inv := a
	if len(m.rules) > 0 {
		if inv, err = v.matchRules(ctx, m.rules, m.equivalent, a); err != nil {
			return nil, err
		}
	}
	if inv == nil {
		return nil, nil
	}
	if nsErr != nil {
		return nil, nsErr
	}
	return inv, nil
}

// matchRules returns a if one of rules matches it, else, when equivalent,
// its view through the first equivalent resource one matches, else nil;
// an error if the conversion to it fails.
func (v *Validator) matchRules(ctx context.Context, rules []namedRule, equivalent bool, a *webhook.Attributes) (*webhook.Attributes, error) {
	if anyRule(rules, a) {
		return a, nil
	}
	if !equivalent || len(rules) == 0 {
		return nil, nil
	}
	for _, eq := range v.source.Equivalents(a.Resource, a.Subresource) {
		view := &webhook.Attributes{Operation: a.Operation, Resource: eq.Resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name}
		if anyRule(rules, view) {
			return a.As(ctx, eq)
		}
	}
	return nil, nil
}

func anyRule(rules []namedRule, a *webhook.Attributes) bool {
	for _, r := range rules {
		if r.Matches(a) && (len(r.names) == 0 || containsString(r.names, a.Name)) {
			return true
		}
	}
	return false
}

// params are kube's CollectParams: a nil param when the policy has no
// paramKind or the binding no paramRef; else the named one or those
// selected, in the request's namespace unless the paramRef names one.
func (v *Validator) params(ctx context.Context, p *Policy, b *Binding, namespace string) ([]api.Object, error) {
	if !p.hasParams || b.paramRef == nil {
		return []api.Object{nil}, nil
	}
	ref := b.paramRef
	pk := p.paramKind
	namespaced, served := v.source.ParamScope(pk.APIVersion, pk.Kind)
	if !served {
		return nil, fmt.Errorf("paramKind kind `%s/%s` not known", pk.APIVersion, pk.Kind)
	}
	ns := ""
	switch {
	case namespaced && ref.Namespace != "":
		ns = ref.Namespace
	case namespaced && namespace == "":
		return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
	case namespaced:
		ns = namespace
	case ref.Namespace != "":
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	var sel selector.Labels
	if ref.Selector != nil {
		sel = *ref.Selector
	}
	params, err := v.source.Params(ctx, pk.APIVersion, pk.Kind, ns, ref.Name, sel)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 && ref.DenyNotFound {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return params, nil
}

// decision is the outcome of one validation.
type decision struct {
	deny    bool
	message string
	reason  api.StatusReason
}

// annotationResult is one audit annotation's value, or the error that
// denies the request (failurePolicy Fail).
type annotationResult struct {
	key, value, err string
}

type result struct {
	decisions   []decision
	annotations []annotationResult
}

// evaluate is kube's validator.Validate for one param, input holding the
// write's object, oldObject, request and namespaceObject: match conditions,
// variables, validations and their messages, audit annotations, under
// the runtime cost budget.
func (p *Policy) evaluate(ctx context.Context, input map[string]any, param api.Object) result {
	onError := func(msg string) result {
		return result{decisions: []decision{{deny: !p.ignore, message: msg}}}
	}
	vars := make(map[string]any, len(input)+2)
	maps.Copy(vars, input)
	if p.hasParams {
		vars["params"] = orNull(param)
	}
	match, err := p.matchConditions(vars)
	if err != nil {
		return onError(err.Error())
	}
	if !match {
		return result{}
	}
	budget := int64(runtimeCostBudget)
	variables := map[ref.Val]ref.Val{}
	vars["variables"] = types.NewRefValMap(types.DefaultTypeAdapter, variables)
	for _, x := range p.variables {
		val, err := evalRaw(ctx, x, vars, &budget)
		if errors.Is(err, errOutOfBudget) {
			return onError(err.Error())
		}
		if err != nil { // an error for the expressions that read it, in kube's words
			val = types.NewErr("composited variable %q fails to evaluate: %v", x.name, err)
		}
		variables[types.String(x.name)] = val
	}
	res := result{decisions: make([]decision, len(p.validations))}
	vals := make([]ref.Val, len(p.validations))
	errs := make([]error, len(p.validations))
	for i, x := range p.validations {
		vals[i], errs[i] = eval(ctx, x.expression, vars, &budget)
		if errors.Is(errs[i], errOutOfBudget) {
			return onError(errs[i].Error())
		}
	}
	for i, x := range p.validations {
		d := &res.decisions[i]
		switch {
		case errs[i] != nil:
			d.deny, d.message = !p.ignore, errs[i].Error()
		case vals[i] != types.True:
			d.deny, d.reason = true, api.StatusReason(cmpOr(x.reason, string(api.StatusReasonInvalid)))
			msg, err := x.failureMessage(ctx, vars, &budget)
			if err != nil {
				d.deny, d.reason, d.message = !p.ignore, "", "failed messageExpression: "+err.Error()
				continue
			}
			d.message = msg
		}
	}
	// The audit annotations share a budget of their own; running out of
	// it fails the whole policy, as it does kube's.
	annotationBudget := int64(runtimeCostBudget)
	for _, x := range p.annotations {
		val, err := eval(ctx, x, vars, &annotationBudget)
		if errors.Is(err, errOutOfBudget) {
			return onError(err.Error())
		}
		an := annotationResult{key: x.name}
		switch {
		case err != nil:
			if !p.ignore {
				an.err = err.Error()
			}
		case val.Type() == types.StringType:
			an.value = strings.TrimSpace(val.Value().(string))
			if len(an.value) > maxAnnotationBytes {
				an.value = an.value[:maxAnnotationBytes]
			}
		case val.Type() == types.NullType:
		default:
			if !p.ignore {
				an.err = fmt.Sprintf("valueExpression '%v' resulted in unsupported return type: %v. Return type must be either string or null.", x.text, val.Type())
			}
		}
		res.annotations = append(res.annotations, an)
	}
	return res
}

// failureMessage is a failed validation's message, as kube chooses it: its
// messageExpression's value when a string on one line and not too long,
// else its message, else the expression. Only running out of budget is
// an error; other failures of messageExpression fall back.
func (x validation) failureMessage(ctx context.Context, vars map[string]any, budget *int64) (string, error) {
	if x.msgExpr != nil {
		val, err := eval(ctx, *x.msgExpr, vars, budget)
		if errors.Is(err, errOutOfBudget) {
			return "", err
		}
		if s, ok := val.(types.String); err == nil && ok {
			if msg := strings.TrimSpace(string(s)); msg != "" && len(msg) <= maxMessageBytes && !strings.Contains(msg, "\n") {
				return msg, nil
			}
		}
	}
	if msg := strings.TrimSpace(x.message); msg != "" {
		return msg, nil
	}
	return "failed expression: " + strings.TrimSpace(x.text), nil
}

var errOutOfBudget = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")

// eval evaluates one expression, charging its cost to budget, with kube's
// error messages.
func eval(ctx context.Context, x expression, vars map[string]any, budget *int64) (ref.Val, error) {
	val, err := evalRaw(ctx, x, vars, budget)
	if err != nil && !errors.Is(err, errOutOfBudget) {
		return nil, fmt.Errorf("expression '%v' resulted in error: %w", x.text, err)
	}
	return val, err
}

// evalRaw is eval with CEL's own errors.
func evalRaw(ctx context.Context, x expression, vars map[string]any, budget *int64) (ref.Val, error) {
	val, details, err := x.program.ContextEval(ctx, vars)
	if details != nil && details.ActualCost() != nil {
		cost := int64(*details.ActualCost())
		if cost > *budget {
			return nil, errOutOfBudget
		}
		*budget -= cost
	}
	return val, err
}

// matchConditions are kube's matcher for a policy's conditions: any false
// is no match; else errors fail the policy (Fail) or skip it (Ignore).
func (p *Policy) matchConditions(vars map[string]any) (bool, error) {
	var errs []error
	for _, c := range p.conditions {
		val, _, err := c.program.Eval(vars)
		if err != nil {
			errs = append(errs, fmt.Errorf("expression '%v' resulted in error: %w", c.text, err))
			continue
		}
		if val == types.False {
			return false, nil
		}
		if val != types.True {
			errs = append(errs, fmt.Errorf("expression '%v' resulted in non-bool value", c.text))
		}
	}
	switch {
	case len(errs) == 0:
		return true, nil
	case p.ignore:
		return false, nil
	}
	return false, errors.Join(errs...)
}

func orNull(o api.Object) any {
	if o == nil {
		return nil
	}
	return webhook.CELValue(map[string]any(o))
}

// namespaceObject is kube's CreateNamespaceObject: a namespace's spec,
// status and the metadata fields policies may read.
func namespaceObject(ns api.Object) any {
	meta := map[string]any{}
	for _, k := range []string{"name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
		"deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "finalizers"} {
		if v, ok := ns.Metadata()[k]; ok {
			meta[k] = v
		}
	}
	out := map[string]any{"metadata": meta}
	for _, k := range []string{"spec", "status"} {
		if v, ok := ns[k]; ok {
			out[k] = v
		}
	}
	return webhook.CELValue(out)
}
