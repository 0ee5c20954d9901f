package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/patch"
)

// Mutator evaluates the MutatingAdmissionPolicies of its Source on
// writes, as kube's MutatingAdmissionPolicy plugin
// (k8s.io/apiserver/pkg/admission/plugin/policy/mutating).
type Mutator struct{ matcher }

var _ webhook.Mutator = (*Mutator)(nil)

// NewMutator returns a Mutator of source's policies; observer may be nil.
func NewMutator(source Source, observer Observer) *Mutator {
	return &Mutator{matcher{source: source, mutating: true, observer: observer}}
}

// Any says whether there are mutating policies (errors read as yes).
func (m *Mutator) Any(ctx context.Context) bool { return m.any(ctx) }

// policyError is one of kube's PolicyErrors: what fails a write when its
// policy's failurePolicy is Fail.
type policyError struct {
	invocation
	message string
	reason  api.StatusReason
}

// Mutate is one round of the mutating policies (see webhook.Reinvocation):
// each policy that matches the write, under each of its bindings that
// does, with each param, whose match conditions hold, applies its
// mutations in order to a.Object. It says whether they changed it, and
// returns kube's Status for the errors of policies with failurePolicy Fail.
func (m *Mutator) Mutate(ctx context.Context, a *webhook.Attributes, r *webhook.Reinvocation) (changed bool, err error) {
	if webhook.Exempt(a) || a.Operation == webhook.Delete { // kube's plugin does not handle deletes
		return false, nil
	}
	policies, err := m.source.Policies(ctx, true)
	if err != nil || len(policies) == 0 {
		return false, err
	}
	r.Begin(a.Object)
	defer func() { r.End(a.Object) }()
	// kube reports the configuration errors its dispatcher met before those
	// of the mutations.
	var configErrs, errs []policyError
	in := newInputs(m.source, a)
	for _, iv := range m.invocations(ctx, a, policies) {
		if iv.err != nil {
			configErrs = append(configErrs, policyError{invocation: iv, message: iv.configMessage()})
			continue
		}
		p, key := iv.policy, iv.key()
		// kube evaluates the match conditions before it skips a policy not
		// to be reinvoked, so that their errors show; without conditions
		// there is nothing to evaluate.
		if len(p.conditions) == 0 && r.Skip(key) {
			continue
		}
		if iv.view != a && changed {
			if err := iv.view.Reload(ctx); err != nil {
				return changed, apierror.Internal(err)
			}
		}
		if len(p.conditions) > 0 {
			input, err := in.of(ctx, iv.view)
			if err != nil {
				return changed, err
			}
			match, err := p.matchConditions(ctx, p.activation(ctx, input, iv.param))
			if err != nil {
				errs = append(errs, policyError{invocation: iv, message: err.Error(), reason: api.StatusReasonInvalid})
				continue
			}
			if !match || r.Skip(key) {
				continue
			}
		}
		before := a.Object
		for _, mu := range p.mutations {
			input, err := in.of(ctx, iv.view)
			if err != nil {
				return changed, err
			}
			start := time.Now()
			obj, err := p.mutate(ctx, mu, input, iv)
			m.observe(iv, err, time.Since(start))
			if err != nil {
				errs = append(errs, policyError{invocation: iv, message: err.Error(), reason: api.StatusReasonInvalid})
				continue
			}
			if obj == nil {
				continue // a JSON patch whose test failed
			}
			iv.view.Object = obj
			if err := iv.view.Store(ctx); err != nil {
				return changed, apierror.Internal(err)
			}
			in.reset()
		}
		mutated := !reflect.DeepEqual(before, a.Object)
		r.Ran(key, mutated, p.reinvoke)
		changed = changed || mutated
	}
	return changed, mutationError(a, append(configErrs, errs...))
}

// observe counts a mutation, as kube's dispatcher does.
func (m *Mutator) observe(iv invocation, err error, elapsed time.Duration) {
	if m.observer == nil {
		return
	}
	typ := "no_error"
	if err != nil {
		typ = errorType(err.Error())
	}
	m.observer.ObserveMutation(iv.policy.Name, iv.binding.Name, typ, elapsed.Seconds())
}

// key names the invocation for reinvocation, as kube's: policy, binding
// and param.
func (iv invocation) key() string {
	k := iv.policy.Name + "/" + iv.binding.Name
	if iv.param != nil {
		k += "/" + iv.param.Namespace() + "/" + iv.param.Name()
	}
	return k
}

// mutate evaluates one mutation and returns the object it makes, nil
// when it leaves the object as it is.
func (p *Policy) mutate(ctx context.Context, mu mutation, input map[string]any, iv invocation) (api.Object, error) {
	budget := int64(runtimeCostBudget)
	val, err := p.activation(ctx, input, iv.param).eval(ctx, mu.expression, &budget)
	if err != nil {
		return nil, err
	}
	if mu.jsonPatch {
		return applyJSONPatch(val, iv.view.Object)
	}
	ov, ok := val.(*objectVal)
	if !ok {
		return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", val.Type())
	}
	if errs := checkTypeNames(ov, ov.typeName); len(errs) > 0 {
		return nil, fmt.Errorf("type mismatch: %w", errors.Join(errs...))
	}
	n, err := native(ov)
	if err != nil {
		return nil, err
	}
	if path := nullPath("", n); path != "" {
		// kube turns a null into the integer 0, which no field of a string,
		// map or list type accepts: it never removes a field.
		return nil, fmt.Errorf("error applying patch: failed to convert patch object to typed object: %s: an apply configuration cannot set null", path)
	}
	config, err := jsonValues(n)
	if err != nil {
		return nil, err
	}
	merged, err := patch.MergeApplyConfiguration(iv.view.Object, config.(map[string]any), patch.SchemaFor(iv.view.Kind.Group, iv.view.Kind.Version, iv.view.Kind.Kind))
	if err != nil {
		return nil, fmt.Errorf("error applying patch: %w", err)
	}
	return merged, nil
}

// nullPath is the path of the first null in v, "" if none.
func nullPath(path string, v any) string {
	switch v := v.(type) {
	case nil:
		return path
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if p := nullPath(path+"."+k, v[k]); p != "" {
				return p
			}
		}
	case []any:
		for i, item := range v {
			if p := nullPath(fmt.Sprintf("%s[%d]", path, i), item); p != "" {
				return p
			}
		}
	}
	return ""
}

// applyJSONPatch applies the JSONPatch list val to obj; a failed test
// leaves it as it was (nil), as kube.
func applyJSONPatch(val any, obj api.Object) (api.Object, error) {
	list, ok := val.(traits.Lister)
	if !ok {
		return nil, errors.New("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	var ops []map[string]any
	for it := list.Iterator(); it.HasNext() == types.True; {
		v := it.Next()
		op, ok := v.(*jsonPatchOp)
		if !ok {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of %v", v.Type())
		}
		o, err := op.operation()
		if err != nil {
			return nil, err
		}
		ops = append(ops, o)
	}
	cur, err := api.MarshalObject(obj)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	patched, err := patch.ApplyJSONPatchOps(cur, ops)
	switch {
	case errors.Is(err, jsonpatch.ErrTestFailed):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("JSON Patch: %w", err)
	}
	out, err := api.ParseObject(patched)
	if err != nil {
		return nil, apierror.Internal(fmt.Errorf("the patched object: %w", err))
	}
	return out, nil
}

// jsonValues is v, a CEL value made native, with the values the server
// decodes from JSON: numbers as json.Number.
func jsonValues(v any) (any, error) {
	switch v := v.(type) {
	case nil, string, bool:
		return v, nil
	case map[string]any:
		for k, x := range v {
			var err error
			if v[k], err = jsonValues(x); err != nil {
				return nil, err
			}
		}
		return v, nil
	case []any:
		for i, x := range v {
			var err error
			if v[i], err = jsonValues(x); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	b, err := json.Marshal(v) // numbers, bytes, timestamps, durations
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	return out, dec.Decode(&out)
}

// mutationError is kube's Status for the errors of policies that fail
// closed: 403 with the first one's message and reason, each as a cause.
func mutationError(a *webhook.Attributes, errs []policyError) error {
	var status *api.StatusError
	for _, e := range errs {
		if e.policy.ignore {
			continue
		}
		msg := fmt.Sprintf("policy %q denied request: %s", e.policy.Name, e.message)
		if e.binding != nil {
			msg = fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", e.policy.Name, e.binding.Name, e.message)
		}
		if status == nil {
			name := a.Name
			if name == "" && a.Object != nil {
				name = a.Object.Name()
			}
			status = apierror.ForbiddenTo(apierror.Target{Group: a.Resource.Group, Resource: a.Resource.Resource, Name: name}, msg)
			status.Status.Message = msg
			if e.reason != "" {
				status.Status.Reason = e.reason
			}
		}
		status.Status.Details.Causes = append(status.Status.Details.Causes, api.StatusCause{Message: msg})
	}
	if status == nil {
		return nil
	}
	return status
}
