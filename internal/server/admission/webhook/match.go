package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/cel-go/common/types"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// Exempt says the write is of an admission configuration, which webhooks
// and admission policies never see (kube's
// IsExemptAdmissionConfigurationResource), so that a broken webhook or
// policy cannot keep itself from being removed.
func Exempt(a *Attributes) bool {
	if a.Kind.Group != "admissionregistration.k8s.io" {
		return false
	}
	switch a.Kind.Kind {
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
		"ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
		return true
	}
	return false
}

// shouldCall is kube's ShouldCallHook: the namespace and object selectors,
// then the rules (through an equivalent resource under matchPolicy
// Equivalent), then the match conditions. It returns the attributes the
// webhook is called with (a itself, or its view through an equivalent
// resource), nil when it is not called. Selector errors matter only for a
// webhook whose rules match.
func (d *Dispatcher) shouldCall(ctx context.Context, h *Webhook, a *Attributes) (*Attributes, error) {
	if h.invalid != nil {
		return d.matching(ctx, h, a) // a call then fails by its failure policy
	}
	nsMatch, nsErr := MatchNamespace(ctx, d.source.NamespaceLabels, h.NamespaceSelector, a)
	if nsErr == nil && !nsMatch {
		return nil, nil
	}
	if !h.ObjectSelector.Empty() && !Selects(h.ObjectSelector, a.Object) && !Selects(h.ObjectSelector, a.OldObject) {
		return nil, nil
	}
	inv, err := d.matching(ctx, h, a)
	if inv == nil || err != nil {
		return nil, err
	}
	if nsErr != nil {
		return nil, nsErr
	}
	ok, err := h.conditions.match(ctx, conditionVars(ctx, inv))
	if err != nil {
		return nil, apierror.ForbiddenTo(apierror.Target{Group: a.Resource.Group, Resource: a.Resource.Resource, Name: a.Name}, err.Error())
	}
	if !ok {
		return nil, nil
	}
	return inv, nil
}

// Selects is kube's matchObject: an absent object (the old one on create,
// the new one on delete) matches no selector, not even one that empty
// labels satisfy (NotIn, DoesNotExist).
func Selects(sel selector.Labels, obj api.Object) bool {
	return obj != nil && sel.Matches(obj.Labels())
}

// matching returns a if the webhook's rules match it, else, under
// matchPolicy Equivalent, its view through the first equivalent resource
// they match, else nil; an error if the conversion to it fails.
func (d *Dispatcher) matching(ctx context.Context, h *Webhook, a *Attributes) (*Attributes, error) {
	if matchesRules(h, a) {
		return a, nil
	}
	if !h.Equivalent {
		return nil, nil
	}
	for _, eq := range d.source.Equivalents(a.Resource, a.Subresource) {
		if matchesRules(h, &Attributes{Operation: a.Operation, Resource: eq.Resource, Subresource: a.Subresource, Namespace: a.Namespace}) {
			return a.As(ctx, eq)
		}
	}
	return nil, nil
}

// MatchNamespace is kube's MatchNamespaceSelector: cluster-scoped objects
// other than namespaces always match; a namespace being created or updated
// is matched on its own labels; others on their namespace's, from labels.
func MatchNamespace(ctx context.Context, labels func(context.Context, string) (map[string]string, error), sel selector.Labels, a *Attributes) (bool, error) {
	isNamespace := a.Resource.Group == "" && a.Resource.Resource == "namespaces"
	if a.Namespace == "" && !isNamespace {
		return true, nil
	}
	if sel.Empty() {
		return true, nil
	}
	if isNamespace && a.Subresource == "" && (a.Operation == Create || a.Operation == Update) {
		return sel.Matches(a.Object.Labels()), nil
	}
	ns := a.Namespace
	if isNamespace {
		ns = a.Name
	}
	l, err := labels(ctx, ns)
	if err != nil {
		return false, apierror.From(err)
	}
	return sel.Matches(l), nil
}

// matchesRules says whether one of the webhook's rules matches the request
// (kube's rules.Matcher).
func matchesRules(h *Webhook, a *Attributes) bool {
	for _, r := range h.Rules {
		if r.Matches(a) {
			return true
		}
	}
	return false
}

// Matches is kube's rules.Matcher: scope, operation, group, version and
// resource with subresource.
func (r Rule) Matches(a *Attributes) bool {
	return r.scopeMatches(a) && anyOf(r.Operations, a.Operation) && anyOf(r.APIGroups, a.Resource.Group) &&
		anyOf(r.APIVersions, a.Resource.Version) && r.resourceMatches(a)
}

func (r Rule) scopeMatches(a *Attributes) bool {
	isNamespace := a.Resource == GVR{Version: "v1", Resource: "namespaces"}
	switch r.Scope {
	case "*", "":
		return true
	case "Namespaced":
		return !isNamespace && a.Namespace != ""
	case "Cluster":
		return isNamespace || a.Namespace == ""
	}
	return false
}

func (r Rule) resourceMatches(a *Attributes) bool {
	for _, rs := range r.Resources {
		res, sub, _ := strings.Cut(rs, "/")
		if (res == "*" || res == a.Resource.Resource) && (sub == "*" || sub == a.Subresource) {
			return true
		}
	}
	return false
}

func anyOf(items []string, s string) bool {
	for _, it := range items {
		if it == "*" || it == s {
			return true
		}
	}
	return false
}

// conditionVars are the variables of match conditions: object, oldObject
// (null when absent), request, the AdmissionRequest's fields, and the
// authorizer variables.
func conditionVars(ctx context.Context, a *Attributes) map[string]any {
	vars := map[string]any{
		"object":    objectOrNull(a.Object),
		"oldObject": objectOrNull(a.OldObject),
		"request":   RequestMap(a),
	}
	AuthorizerValues(ctx, a, vars)
	return vars
}

func objectOrNull(o api.Object) any {
	if o == nil {
		return nil
	}
	return CELValue(map[string]any(o))
}

// CELValue is a JSON value as CEL reads it, as kube's unstructured
// objects hold it: integers as int64, other numbers as float64.
func CELValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = CELValue(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = CELValue(x)
		}
		return out
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case nil:
		return types.NullValue
	}
	return v
}

// RequestMap is the request as match conditions see it (kube's
// CreateAdmissionRequest), built from the review each webhook is sent.
func RequestMap(a *Attributes) map[string]any {
	r := newRequest(a, "")
	user := map[string]any{"username": r.UserInfo.Username, "uid": r.UserInfo.UID, "groups": api.StringList(r.UserInfo.Groups)}
	extra := map[string]any{}
	for k, v := range r.UserInfo.Extra {
		extra[k] = api.StringList(v)
	}
	user["extra"] = extra
	gvk := func(k GVK) map[string]any {
		return map[string]any{"group": k.Group, "version": k.Version, "kind": k.Kind}
	}
	gvr := func(r GVR) map[string]any {
		return map[string]any{"group": r.Group, "version": r.Version, "resource": r.Resource}
	}
	return map[string]any{
		"kind": gvk(r.Kind), "resource": gvr(r.Resource), "subResource": r.SubResource,
		"requestKind": gvk(*r.RequestKind), "requestResource": gvr(*r.RequestResource), "requestSubResource": r.RequestSubResource,
		"name": r.Name, "namespace": r.Namespace, "operation": r.Operation, "userInfo": user,
		"dryRun": *r.DryRun, "options": objectOrNull(a.Options),
	}
}

// dryRunUnsupported is kube's NewDryRunUnsupportedErr: 400.
func dryRunUnsupported(name string) error {
	return apierror.BadRequest(fmt.Sprintf("admission webhook %q does not support dry run", name))
}
