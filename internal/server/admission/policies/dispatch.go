package policies

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// Source gives the policies in force with their bindings, namespaces and
// params, from the server's caches.
type Source interface {
	// Policies returns the compiled policies of one kind (validating or
	// mutating) by name, each with its bindings by name.
	Policies(ctx context.Context, mutating bool) ([]*Policy, error)
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

// matcher is what the validating and the mutating policies share, as
// kube's generic policy dispatcher: which policies, bindings and params a
// write reaches, and the input their expressions read.
type matcher struct {
	source   Source
	mutating bool
	observer Observer // nil: no metrics
}

// Observer is told of each check of a policy, for kube's
// apiserver_validating_admission_policy_* and
// apiserver_mutating_admission_policy_* metrics: errorType is kube's
// (no_error, compile_error, out_of_budget, invalid_error), action the
// enforcement action of a validation (allow, deny, warn, audit).
type Observer interface {
	ObserveValidation(policy, binding, errorType, action string, seconds float64)
	ObserveMutation(policy, binding, errorType string, seconds float64)
}

// errorType is kube's ErrorType of a check that failed or was refused,
// read from its message as kube reads it.
func errorType(message string) string {
	switch {
	case strings.HasPrefix(message, "compilation"):
		return "compile_error"
	case strings.HasPrefix(message, errOutOfBudget.Error()):
		return "out_of_budget"
	}
	return "invalid_error"
}

// any says whether there are policies (errors read as yes: the call then
// reports them), so that a write without them skips preparing attributes.
func (m *matcher) any(ctx context.Context) bool {
	ps, err := m.source.Policies(ctx, m.mutating)
	return err != nil || len(ps) > 0
}

// invocation is one policy to evaluate under one of its bindings with one
// param (nil without), on the write as the policy sees it; or, when err is
// set, the configuration error of the policy (binding nil) or binding.
type invocation struct {
	policy  *Policy
	binding *Binding
	view    *webhook.Attributes
	param   api.Object
	err     error
}

// invocations are kube's policy dispatchers': for each policy whose
// matchConstraints match the write, each of its bindings that matches it
// too, with each of the binding's params; and, in their place, the
// configuration errors met on the way.
func (m *matcher) invocations(ctx context.Context, a *webhook.Attributes, policies []*Policy) []invocation {
	var out []invocation
	for _, p := range policies {
		view, err := m.matches(ctx, p.match, a)
		if err == nil && view != nil {
			err = p.configErr
		}
		if err != nil {
			out = append(out, invocation{policy: p, err: err})
			continue
		}
		if view == nil {
			continue
		}
		for _, b := range p.Bindings {
			err := b.configErr
			if err == nil && b.match != nil {
				var bv *webhook.Attributes
				if bv, err = m.matches(ctx, b.match, a); err == nil && bv == nil {
					continue
				}
			}
			var params []api.Object
			if err == nil {
				params, err = m.params(ctx, p, b, a.Namespace)
			}
			if err != nil {
				out = append(out, invocation{policy: p, binding: b, err: err})
				continue
			}
			for _, param := range params {
				out = append(out, invocation{policy: p, binding: b, view: view, param: param})
			}
		}
	}
	return out
}

// configMessage is kube's message of an invocation's configuration error.
func (iv invocation) configMessage() string {
	if iv.binding == nil {
		return "failed to configure policy: " + iv.err.Error()
	}
	return "failed to configure binding: " + iv.err.Error()
}

// inputs are what the policies read of a write (object, oldObject,
// request, namespaceObject), converted for CEL once per view of it.
type inputs struct {
	source Source
	a      *webhook.Attributes
	views  map[*webhook.Attributes]map[string]any
	ns     any // nil until read
}

func newInputs(source Source, a *webhook.Attributes) *inputs {
	return &inputs{source: source, a: a, views: map[*webhook.Attributes]map[string]any{}}
}

// of returns the input of view; the namespace is read once.
func (in *inputs) of(ctx context.Context, view *webhook.Attributes) (map[string]any, error) {
	if vars := in.views[view]; vars != nil {
		return vars, nil
	}
	if in.ns == nil {
		in.ns = types.NullValue
		a := in.a
		if a.Namespace != "" && !(a.Kind == webhook.GVK{Version: "v1", Kind: "Namespace"}) {
			obj, err := in.source.Namespace(ctx, a.Namespace)
			if err != nil {
				return nil, apierror.From(err)
			}
			in.ns = namespaceObject(obj)
		}
	}
	vars := map[string]any{
		"object":          orNull(view.Object),
		"oldObject":       orNull(view.OldObject),
		"request":         webhook.CELValue(webhook.RequestMap(view)),
		"namespaceObject": in.ns,
	}
	webhook.AuthorizerValues(ctx, view, vars)
	in.views[view] = vars
	return vars, nil
}

// reset forgets the inputs, once a mutation changed the object.
func (in *inputs) reset() { clear(in.views) }

// matches is kube's policy Matcher.Matches: the namespace and object
// selectors, the excluded rules, then the rules (through an equivalent
// resource under matchPolicy Equivalent; no rules match everything). It
// returns the attributes the policy sees (a, or its view through the
// equivalent resource), nil when it does not match. Selector errors
// matter only when the rules match.
func (m *matcher) matches(ctx context.Context, mr *matchResources, a *webhook.Attributes) (*webhook.Attributes, error) {
	nsMatch, nsErr := webhook.MatchNamespace(ctx, m.source.NamespaceLabels, mr.namespaceSelector, a)
	if nsErr == nil && !nsMatch {
		return nil, nil
	}
	if !mr.objectSelector.Empty() && !webhook.Selects(mr.objectSelector, a.Object) && !webhook.Selects(mr.objectSelector, a.OldObject) {
		return nil, nil
	}
	excluded, err := m.matchRules(ctx, mr.exclude, mr.equivalent, a)
	if err != nil || excluded != nil {
		return nil, err
	}
	inv := a
	if len(mr.rules) > 0 {
		if inv, err = m.matchRules(ctx, mr.rules, mr.equivalent, a); err != nil {
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
func (m *matcher) matchRules(ctx context.Context, rules []namedRule, equivalent bool, a *webhook.Attributes) (*webhook.Attributes, error) {
	if anyRule(rules, a) {
		return a, nil
	}
	if !equivalent || len(rules) == 0 {
		return nil, nil
	}
	for _, eq := range m.source.Equivalents(a.Resource, a.Subresource) {
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
func (m *matcher) params(ctx context.Context, p *Policy, b *Binding, namespace string) ([]api.Object, error) {
	if !p.hasParams || b.paramRef == nil {
		return []api.Object{nil}, nil
	}
	ref := b.paramRef
	pk := p.paramKind
	namespaced, served := m.source.ParamScope(pk.APIVersion, pk.Kind)
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
	params, err := m.source.Params(ctx, pk.APIVersion, pk.Kind, ns, ref.Name, sel)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 && ref.DenyNotFound {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return params, nil
}

// conditionCostBudget is kube's runtime cost budget of a policy's match
// conditions, which they share (RuntimeCELCostBudgetMatchConditions).
const conditionCostBudget = 2_500_000

// matchConditions are kube's matcher for a policy's conditions, all
// evaluated first under one shared budget: any false is no match; else
// errors, and running out of the budget, fail the policy (Fail) or skip
// it (Ignore).
func (p *Policy) matchConditions(ctx context.Context, act *activation) (bool, error) {
	// kube's matcher evaluates them without the namespace.
	act.vars["namespaceObject"] = types.NullValue
	budget := int64(conditionCostBudget)
	vals := make([]ref.Val, len(p.conditions))
	errs := make([]error, len(p.conditions))
	for i, c := range p.conditions {
		if vals[i], errs[i] = act.evalRaw(ctx, c, &budget); errors.Is(errs[i], errOutOfBudget) {
			return false, p.failed(errs[i])
		}
	}
	var failed []error
	for i, c := range p.conditions {
		switch {
		case errs[i] != nil:
			failed = append(failed, fmt.Errorf("expression '%v' resulted in error: %w", c.text, errs[i]))
		case vals[i] == types.False:
			return false, nil
		case vals[i] != types.True:
			failed = append(failed, fmt.Errorf("expression '%v' resulted in non-bool value", c.text))
		}
	}
	if len(failed) == 0 {
		return true, nil
	}
	return false, p.failed(errors.Join(failed...))
}

// failed is what an error of the match conditions makes of the policy:
// no match under failurePolicy Ignore, else the error.
func (p *Policy) failed(err error) error {
	if p.ignore {
		return nil
	}
	return err
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
