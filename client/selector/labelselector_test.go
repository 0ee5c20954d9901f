package selector_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/selector"
)

func TestFromLabelSelector(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   *selector.LabelSelector
		want string // String() of the result
	}{
		{"empty", &selector.LabelSelector{}, ""},
		{"match labels sorted", &selector.LabelSelector{MatchLabels: map[string]string{"b": "1", "a": "2"}}, "a=2,b=1"},
		{"expressions", &selector.LabelSelector{MatchExpressions: []selector.LabelSelectorRequirement{
			{Key: "tier", Operator: selector.LabelSelectorOpIn, Values: []string{"b", "a"}},
			{Key: "env", Operator: selector.LabelSelectorOpNotIn, Values: []string{"dev"}},
			{Key: "app", Operator: selector.LabelSelectorOpExists},
			{Key: "zone", Operator: selector.LabelSelectorOpDoesNotExist},
		}}, "app,env notin (dev),tier in (a,b),!zone"},
		{"duplicate values kept", &selector.LabelSelector{MatchExpressions: []selector.LabelSelectorRequirement{
			{Key: "a", Operator: selector.LabelSelectorOpIn, Values: []string{"x", "x"}},
		}}, "a in (x,x)"},
		{"match labels before expressions on a key", &selector.LabelSelector{
			MatchLabels: map[string]string{"a": "1"},
			MatchExpressions: []selector.LabelSelectorRequirement{
				{Key: "a", Operator: selector.LabelSelectorOpNotIn, Values: []string{"2"}},
			},
		}, "a=1,a notin (2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := selector.FromLabelSelector(tt.in)
			if err != nil {
				t.Fatalf("FromLabelSelector(%+v): %v", tt.in, err)
			}
			if got := s.String(); got != tt.want {
				t.Errorf("FromLabelSelector(%+v).String() mismatch (-want +got):\n-%q\n+%q", tt.in, tt.want, got)
			}
		})
	}
}

func TestFromLabelSelectorNilSelectsNothing(t *testing.T) {
	t.Parallel()
	s, err := selector.FromLabelSelector(nil)
	if err != nil {
		t.Fatalf("FromLabelSelector(nil): %v", err)
	}
	if s.Empty() || s.Matches(nil) || s.Matches(map[string]string{"a": "b"}) {
		t.Errorf("FromLabelSelector(nil): Empty() = %v, Matches(nil) = %v; want false, false", s.Empty(), s.Matches(nil))
	}
	if _, ok := s.RequiresExactMatch("a"); ok {
		t.Error("FromLabelSelector(nil).RequiresExactMatch(\"a\") found a value, want none")
	}
}

func TestFromLabelSelectorExactMatch(t *testing.T) {
	t.Parallel()
	s, err := selector.FromLabelSelector(&selector.LabelSelector{MatchExpressions: []selector.LabelSelectorRequirement{
		{Key: "a", Operator: selector.LabelSelectorOpIn, Values: []string{"x"}},
		{Key: "b", Operator: selector.LabelSelectorOpIn, Values: []string{"x", "x"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.RequiresExactMatch("a"); v != "x" || !ok {
		t.Errorf(`RequiresExactMatch("a") = %q, %v; want "x", true`, v, ok)
	}
	if _, ok := s.RequiresExactMatch("b"); ok {
		t.Error(`RequiresExactMatch("b") found a value; want none for a repeated value, as Kubernetes`)
	}
}

func TestFromLabelSelectorErrors(t *testing.T) {
	t.Parallel()
	expr := func(key string, op selector.LabelSelectorOperator, values ...string) *selector.LabelSelector {
		return &selector.LabelSelector{MatchExpressions: []selector.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	tests := []struct {
		name string
		in   *selector.LabelSelector
		want string // in the message
	}{
		{"in without values", expr("a", selector.LabelSelectorOpIn), "matchExpressions[0]: key \"a\": values must be non-empty"},
		{"notin without values", expr("a", selector.LabelSelectorOpNotIn), "values must be non-empty"},
		{"exists with values", expr("a", selector.LabelSelectorOpExists, "x"), "values must be empty"},
		{"does not exist with values", expr("a", selector.LabelSelectorOpDoesNotExist, ""), "values must be empty"},
		{"unknown operator", expr("a", "Equals"), `"Equals" is not a valid label selector operator`},
		{"lowercase operator", expr("a", "in", "x"), `"in" is not a valid label selector operator`},
		{"bad key", expr("-a", selector.LabelSelectorOpExists), `matchExpressions[0]: key "-a": name part`},
		{"bad value", expr("a", selector.LabelSelectorOpIn, "x y"), `value "x y" of key "a"`},
		{"bad match label key", &selector.LabelSelector{MatchLabels: map[string]string{"": "x"}}, `matchLabels: key "": name part must be non-empty`},
		{"bad match label value", &selector.LabelSelector{MatchLabels: map[string]string{"a": "x/y"}}, `matchLabels: value "x/y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := selector.FromLabelSelector(tt.in)
			if err == nil {
				t.Fatalf("FromLabelSelector(%+v) succeeded, want error containing %q", tt.in, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FromLabelSelector(%+v) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
			var e *selector.Error
			if !errors.As(err, &e) || e.Kind != "label" {
				t.Errorf("FromLabelSelector(%+v) error = %#v, want a *selector.Error of kind label", tt.in, err)
			}
		})
	}
}
