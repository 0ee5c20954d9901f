package selector_test

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listwatch/listwatch/client/selector"
)

// compareLabels parses s with both implementations and returns whether
// apimachinery accepted it and the differences in outcome, String, Empty,
// RequiresExactMatch and Matches on each set.
func compareLabels(s string, sets []map[string]string) (accepted bool, diffs []string) {
	ours, ourErr := selector.ParseLabels(s)
	theirs, theirErr := labels.Parse(s)
	if (ourErr == nil) != (theirErr == nil) {
		return theirErr == nil, []string{fmt.Sprintf("ParseLabels(%q) error (-want +got):\n-%v\n+%v", s, theirErr, ourErr)}
	}
	if ourErr != nil {
		return false, nil
	}
	return true, compareLabelSelectors(fmt.Sprintf("ParseLabels(%q)", s), ours, theirs, sets)
}

func compareLabelSelectors(name string, ours selector.Labels, theirs labels.Selector, sets []map[string]string) []string {
	var diffs []string
	diff := func(what string, want, got any) {
		if want != got {
			diffs = append(diffs, fmt.Sprintf("%s.%s (-want +got):\n-%#v\n+%#v", name, what, want, got))
		}
	}
	diff("String()", theirs.String(), ours.String())
	diff("Empty()", theirs.Empty(), ours.Empty())
	reqs, _ := theirs.Requirements()
	for _, set := range append(sets, setFrom(reqs)) {
		diff(fmt.Sprintf("Matches(%q)", set), theirs.Matches(labels.Set(set)), ours.Matches(set))
	}
	for _, r := range reqs {
		wv, wok := theirs.RequiresExactMatch(r.Key())
		gv, gok := ours.RequiresExactMatch(r.Key())
		diff(fmt.Sprintf("RequiresExactMatch(%q)", r.Key()), fmt.Sprint(wv, wok), fmt.Sprint(gv, gok))
	}
	return diffs
}

// setFrom returns a label set likely to satisfy many of reqs: each key with
// the smallest of its requirement's values.
func setFrom(reqs labels.Requirements) map[string]string {
	set := map[string]string{}
	for _, r := range reqs {
		set[r.Key()] = ""
		if vs := r.Values().List(); len(vs) > 0 {
			set[r.Key()] = vs[0]
		}
	}
	return set
}

// compareFields is compareLabels for field selectors, also comparing Keys.
func compareFields(s string, sets []map[string]string) (accepted bool, diffs []string) {
	ours, ourErr := selector.ParseFields(s)
	theirs, theirErr := fields.ParseSelector(s)
	if (ourErr == nil) != (theirErr == nil) {
		return theirErr == nil, []string{fmt.Sprintf("ParseFields(%q) error (-want +got):\n-%v\n+%v", s, theirErr, ourErr)}
	}
	if ourErr != nil {
		return false, nil
	}
	diff := func(what string, want, got any) {
		if fmt.Sprint(want) != fmt.Sprint(got) {
			diffs = append(diffs, fmt.Sprintf("ParseFields(%q).%s (-want +got):\n-%#v\n+%#v", s, what, want, got))
		}
	}
	diff("String()", theirs.String(), ours.String())
	diff("Empty()", theirs.Empty(), ours.Empty())
	diff("Keys()", fieldKeysOf(theirs), ours.Keys())
	for _, k := range ours.Keys() {
		wv, wok := theirs.RequiresExactMatch(k)
		gv, gok := ours.RequiresExactMatch(k)
		diff(fmt.Sprintf("RequiresExactMatch(%q)", k), fmt.Sprint(wv, wok), fmt.Sprint(gv, gok))
	}
	for _, set := range append(sets, fieldSetFrom(theirs)) {
		diff(fmt.Sprintf("Matches(%q)", set), theirs.Matches(fields.Set(set)), ours.Matches(set))
	}
	return true, diffs
}

// fieldSetFrom returns the field set that satisfies the = terms of s.
func fieldSetFrom(s fields.Selector) map[string]string {
	set := map[string]string{}
	for _, r := range s.Requirements() {
		set[r.Field] = r.Value
	}
	return set
}

func fieldKeysOf(s fields.Selector) []string {
	keys := []string{}
	for _, r := range s.Requirements() {
		keys = append(keys, r.Field)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// compareStructured converts a structured selector with both implementations.
func compareStructured(ls *selector.LabelSelector, sets []map[string]string) (accepted bool, diffs []string) {
	ours, ourErr := selector.FromLabelSelector(ls)
	theirs, theirErr := metav1.LabelSelectorAsSelector(toMetav1(ls))
	name := fmt.Sprintf("FromLabelSelector(%+v)", ls)
	if (ourErr == nil) != (theirErr == nil) {
		return theirErr == nil, []string{fmt.Sprintf("%s error (-want +got):\n-%v\n+%v", name, theirErr, ourErr)}
	}
	if ourErr != nil {
		return false, nil
	}
	return true, compareLabelSelectors(name, ours, theirs, sets)
}

func toMetav1(ls *selector.LabelSelector) *metav1.LabelSelector {
	if ls == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: ls.MatchLabels}
	for _, e := range ls.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values,
		})
	}
	return out
}
