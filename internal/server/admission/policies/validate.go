package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

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

// Validator evaluates the ValidatingAdmissionPolicies of its Source on
// writes.
type Validator struct{ matcher }

// New returns a Validator of source's policies; observer may be nil.
func New(source Source, observer Observer) *Validator {
	return &Validator{matcher{source: source, observer: observer}}
}

// Any says whether there are validating policies (errors read as yes:
// Validate then reports them), so that a write without them skips
// preparing attributes.
func (v *Validator) Any(ctx context.Context) bool { return v.any(ctx) }

// Validate evaluates every policy whose matchConstraints match the write,
// under each of its bindings that match it too, with each of the
// binding's params, as kube's ValidatingAdmissionPolicy plugin: a failed
// validation is denied, warned or audited by the binding's
// validationActions. It returns the first denial as kube's Status.
func (v *Validator) Validate(ctx context.Context, a *webhook.Attributes) error {
	if webhook.Exempt(a) {
		return nil
	}
	policies, err := v.source.Policies(ctx, false)
	if err != nil || len(policies) == 0 {
		return err
	}
	var denied []denial
	var failures []failureValue
	in := newInputs(v.source, a)
	annotations := map[*Policy]map[string][]string{}
	for _, iv := range v.invocations(ctx, a, policies) {
		p, b := iv.policy, iv.binding
		if iv.err != nil {
			if !p.ignore {
				d := denial{policy: p.Name, message: iv.configMessage()}
				if b != nil {
					d.binding = b.Name
				}
				denied = append(denied, d)
			}
			continue
		}
		input, err := in.of(ctx, iv.view)
		if err != nil {
			return err
		}
		res := p.evaluate(ctx, input, iv.param)
		// observe counts a check as kube's dispatcher does: denials once
		// per action, and admissions only when an error was ignored.
		observe := func(d decision, action string) {
			if v.observer != nil {
				v.observer.ObserveValidation(p.Name, b.Name, errorType(d.message), action, d.elapsed.Seconds())
			}
		}
		for i, d := range res.decisions {
			if !d.deny {
				if d.errored {
					observe(d, "allow")
				}
				continue
			}
			if b.deny {
				denied = append(denied, denial{policy: p.Name, binding: b.Name, message: d.message, reason: d.reason})
				observe(d, "deny")
			}
			if b.audit {
				failures = append(failures, failureValue{Message: d.message, Policy: p.Name, Binding: b.Name, ExpressionIndex: i, ValidationActions: b.actions})
				observe(d, "audit")
			}
			if b.warn {
				a.Warn(fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.Name, b.Name, d.message))
				observe(d, "warn")
			}
		}
		for _, an := range res.annotations {
			switch {
			case an.err != "":
				denied = append(denied, denial{policy: p.Name, binding: b.Name, message: an.err})
				observe(decision{message: an.err, elapsed: an.elapsed}, "deny")
			case an.value != "":
				if annotations[p] == nil {
					annotations[p] = map[string][]string{}
				}
				if !containsString(annotations[p][an.key], an.value) {
					annotations[p][an.key] = append(annotations[p][an.key], an.value)
				}
			}
		}
	}
	for p, byKey := range annotations {
		for k, vals := range byKey {
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

// decision is the outcome of one validation: errored when it could not
// be evaluated (kube's EvalError), then denied as failurePolicy says.
type decision struct {
	deny, errored bool
	message       string
	reason        api.StatusReason
	elapsed       time.Duration // the evaluation of its expression
}

// annotationResult is one audit annotation's value, or the error that
// denies the request (failurePolicy Fail).
type annotationResult struct {
	key, value, err string
	elapsed         time.Duration
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
		return result{decisions: []decision{{deny: !p.ignore, errored: true, message: msg}}}
	}
	// Each phase reads the variables afresh, as each of kube's ForInput
	// calls does.
	if len(p.conditions) > 0 {
		match, err := p.matchConditions(ctx, p.activation(ctx, input, param))
		if err != nil {
			return onError(err.Error())
		}
		if !match {
			return result{}
		}
	}
	budget := int64(runtimeCostBudget)
	act := p.activation(ctx, input, param)
	res := result{decisions: make([]decision, len(p.validations))}
	vals := make([]ref.Val, len(p.validations))
	errs := make([]error, len(p.validations))
	for i, x := range p.validations {
		start := time.Now()
		vals[i], errs[i] = act.eval(ctx, x.expression, &budget)
		res.decisions[i].elapsed = time.Since(start)
		if errors.Is(errs[i], errOutOfBudget) {
			return onError(errs[i].Error())
		}
	}
	var messages *activation // made when a failed validation needs one
	for i, x := range p.validations {
		d := &res.decisions[i]
		switch {
		case errs[i] != nil:
			d.deny, d.errored, d.message = !p.ignore, true, errs[i].Error()
		case vals[i] != types.True:
			d.deny, d.reason = true, api.StatusReason(cmpOr(x.reason, string(api.StatusReasonInvalid)))
			if messages == nil && x.msgExpr != nil {
				messages = p.activation(ctx, input, param)
			}
			msg, err := x.failureMessage(ctx, messages, &budget)
			if err != nil {
				d.deny, d.errored, d.reason, d.message = !p.ignore, true, "", "failed messageExpression: "+err.Error()
				continue
			}
			d.message = msg
		}
	}
	// The audit annotations share a budget of their own; running out of
	// it fails the whole policy, as it does kube's.
	annotationBudget := int64(runtimeCostBudget)
	if len(p.annotations) > 0 {
		act = p.activation(ctx, input, param)
	}
	for _, x := range p.annotations {
		start := time.Now()
		val, err := act.eval(ctx, x, &annotationBudget)
		if errors.Is(err, errOutOfBudget) {
			return onError(err.Error())
		}
		an := annotationResult{key: x.name, elapsed: time.Since(start)}
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
func (x validation) failureMessage(ctx context.Context, act *activation, budget *int64) (string, error) {
	if x.msgExpr != nil {
		val, err := act.eval(ctx, *x.msgExpr, budget)
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
