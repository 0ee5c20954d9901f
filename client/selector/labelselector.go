package selector

import (
	"fmt"
	"maps"
	"slices"
)

// LabelSelector is the structured form of a label selector found in API
// objects (a Deployment's spec.selector), with the JSON shape of Kubernetes'
// metav1.LabelSelector. Its requirements are ANDed.
type LabelSelector struct {
	// MatchLabels requires each key to have exactly the given value.
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// MatchExpressions are further requirements.
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement relates a key to a set of values.
type LabelSelectorRequirement struct {
	Key      string                `json:"key"`
	Operator LabelSelectorOperator `json:"operator"`
	// Values must be non-empty for In and NotIn, empty for Exists and
	// DoesNotExist.
	Values []string `json:"values,omitempty"`
}

// LabelSelectorOperator is the operator of a LabelSelectorRequirement.
type LabelSelectorOperator string

// The operators of a LabelSelectorRequirement.
const (
	LabelSelectorOpIn           LabelSelectorOperator = "In"
	LabelSelectorOpNotIn        LabelSelectorOperator = "NotIn"
	LabelSelectorOpExists       LabelSelectorOperator = "Exists"
	LabelSelectorOpDoesNotExist LabelSelectorOperator = "DoesNotExist"
)

var structuredOps = map[LabelSelectorOperator]operator{
	LabelSelectorOpIn:           opIn,
	LabelSelectorOpNotIn:        opNotIn,
	LabelSelectorOpExists:       opExists,
	LabelSelectorOpDoesNotExist: opDoesNotExist,
}

// FromLabelSelector converts a structured selector as Kubernetes'
// metav1.LabelSelectorAsSelector does: nil selects nothing, a selector without
// requirements selects everything, and keys, values and operators are
// validated.
func FromLabelSelector(ls *LabelSelector) (Labels, error) {
	if ls == nil {
		return Labels{nothing: true}, nil
	}
	reqs, err := structuredRequirements(ls)
	if err != nil {
		return Labels{}, &Error{Kind: "label", Err: err}
	}
	// Stable, so that a key in both MatchLabels and MatchExpressions keeps
	// this order; Kubernetes' order is the same for up to 12 requirements
	// and unspecified beyond.
	slices.SortStableFunc(reqs, compareKeys)
	return Labels{reqs: reqs}, nil
}

func structuredRequirements(ls *LabelSelector) ([]requirement, error) {
	reqs := make([]requirement, 0, len(ls.MatchLabels)+len(ls.MatchExpressions))
	for _, k := range slices.Sorted(maps.Keys(ls.MatchLabels)) {
		r, err := newRequirement(k, opEquals, []string{ls.MatchLabels[k]})
		if err != nil {
			return nil, fmt.Errorf("matchLabels: %w", err)
		}
		reqs = append(reqs, r)
	}
	for i, e := range ls.MatchExpressions {
		r, err := expressionRequirement(e)
		if err != nil {
			return nil, fmt.Errorf("matchExpressions[%d]: %w", i, err)
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// expressionRequirement keeps duplicate values, as Kubernetes does: they
// show in String and make "In" with a repeated single value no exact match.
func expressionRequirement(e LabelSelectorRequirement) (requirement, error) {
	op, ok := structuredOps[e.Operator]
	if !ok {
		return requirement{}, fmt.Errorf("%q is not a valid label selector operator (In, NotIn, Exists, DoesNotExist)", e.Operator)
	}
	return newRequirement(e.Key, op, slices.Sorted(slices.Values(e.Values)))
}
