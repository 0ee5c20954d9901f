package crd

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/api"
)

// celSchema is a schema with rules on the root, a scalar, a list's items and
// a transition rule, each message form kube has.
const celSchema = `{"type":"object","properties":{"spec":{"type":"object",
 "x-kubernetes-validations":[
  {"rule":"self.min <= self.max","message":"min must not exceed max"},
  {"rule":"!has(self.mode) || self.mode != 'off' || self.max == 0","messageExpression":"'mode off needs max 0, not ' + (self.max > 1 ? 'more' : 'one')","reason":"FieldValueForbidden","fieldPath":".max"},
  {"rule":"self.mode == oldSelf.mode","message":"mode is immutable"},
  {"rule":"self.?name.orValue('') != 'bad-name'"}],
 "properties":{
  "min":{"type":"integer"},"max":{"type":"integer"},
  "mode":{"type":"string","maxLength":10},
  "name":{"type":"string","maxLength":10,"x-kubernetes-validations":[{"rule":"self.startsWith('a')"}]},
  "ports":{"type":"array","maxItems":4,"items":{"type":"integer","x-kubernetes-validations":[{"rule":"self > 0","message":"must be positive"}]}}}}}}`

func mustRules(t testing.TB, raw string) *Schema {
	t.Helper()
	s, err := ParseSchema([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if causes := s.compileRules("schema"); causes != nil {
		t.Fatalf("compile: %v", causes)
	}
	return s
}

func TestValidateRules(t *testing.T) {
	s := mustRules(t, celSchema)
	spec := func(kv ...any) api.Object {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return api.Object{"spec": m}
	}
	tests := []struct {
		name     string
		obj, old api.Object
		want     []api.StatusCause
	}{
		{"valid", spec("min", int64(1), "max", int64(2), "name", "abc", "ports", []any{int64(80)}), nil, nil},
		{"message", spec("min", int64(3), "max", int64(2)), nil, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec", Message: "Invalid value: min must not exceed max"}}},
		{"messageExpression, reason, fieldPath", spec("min", int64(0), "max", int64(2), "mode", "off"), nil, []api.StatusCause{
			{Type: api.CauseTypeFieldValueForbidden, Field: "spec.max", Message: "Forbidden: mode off needs max 0, not more"}}},
		{"optional field and scalar rule", spec("min", int64(0), "max", int64(0), "name", "bad-name"), nil, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec", Message: "Invalid value: failed rule: self.?name.orValue('') != 'bad-name'"},
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.name", Message: `Invalid value: "bad-name": failed rule: self.startsWith('a')`}}},
		{"items", spec("min", int64(0), "max", int64(0), "ports", []any{int64(1), int64(-1)}), nil, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.ports[1]", Message: "Invalid value: -1: must be positive"}}},
		{"transition rule runs only with an old value", spec("min", int64(0), "max", int64(0), "mode", "on"), spec("min", int64(0), "max", int64(0), "mode", "auto"), []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec", Message: "Invalid value: mode is immutable"}}},
		{"transition rule unchanged", spec("min", int64(0), "max", int64(0), "mode", "on"), spec("min", int64(0), "max", int64(0), "mode", "on"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.ValidateRules(context.Background(), tt.obj, nil)
			if tt.old != nil {
				got = append(got, s.ValidateRules(context.Background(), tt.obj, tt.old)...)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompileRulesRefuses(t *testing.T) {
	tests := []struct {
		name, schema, field, message string
	}{
		{"syntax", `{"type":"object","x-kubernetes-validations":[{"rule":"self.a =="}]}`,
			"s.x-kubernetes-validations[0].rule", "compilation failed: ERROR: <input>:1:10: Syntax error"},
		{"not a bool", `{"type":"object","properties":{"a":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"1 + 1"}]}`,
			"s.x-kubernetes-validations[0].rule", "cel expression must evaluate to a bool"},
		{"messageExpression not a string", `{"type":"object","x-kubernetes-validations":[{"rule":"true","messageExpression":"1"}]}`,
			"s.x-kubernetes-validations[0].messageExpression", "messageExpression must evaluate to a string"},
		{"unbounded nested loops", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"}}},"x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, x == y))"}]}`,
			"s.x-kubernetes-validations[0].rule", "Forbidden: estimated rule cost exceeds budget by factor of more than 100x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSchema([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			causes := s.compileRules("s")
			if len(causes) == 0 || causes[0].Field != tt.field || !strings.Contains(causes[0].Message, tt.message) {
				t.Fatalf("causes = %v, want %s: ...%s...", causes, tt.field, tt.message)
			}
		})
	}
}

// TestCompileRulesBounded checks that the same nested loops are accepted
// when maxItems bounds them, as kube's estimate allows.
func TestCompileRulesBounded(t *testing.T) {
	mustRules(t, `{"type":"object","properties":{"l":{"type":"array","maxItems":10,"items":{"type":"string","maxLength":10}}},"x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, x == y))"}]}`)
}

// TestUnsupportedFunctionSkipped checks that a rule calling a kube library
// function we do not have leaves the definition valid and is not enforced.
func TestUnsupportedFunctionSkipped(t *testing.T) {
	s := mustRules(t, `{"type":"object","properties":{"q":{"type":"string"}},"x-kubernetes-validations":[{"rule":"isURL(self.q)"},{"rule":"self.q != 'x'"}]}`)
	if s.rules[0].unsupported != "isURL" {
		t.Errorf("unsupported = %q, want isURL", s.rules[0].unsupported)
	}
	got := s.ValidateRules(context.Background(), map[string]any{"q": "x"}, nil)
	want := []api.StatusCause{{Type: api.CauseTypeFieldValueInvalid, Field: "<nil>", Message: "Invalid value: failed rule: self.q != 'x'"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}

// TestRuntimeBudget checks that a rule whose cost the estimate cannot bound
// (a string of unknown length, repeated) is stopped by the per-call limit.
func TestRuntimeBudget(t *testing.T) {
	s := mustRules(t, `{"type":"object","properties":{"l":{"type":"array","maxItems":1000,"items":{"type":"string","maxLength":1}}},"x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, x == y))"}]}`)
	l := make([]any, 1000)
	for i := range l {
		l[i] = "a"
	}
	got := s.ValidateRules(context.Background(), map[string]any{"l": l}, nil)
	if len(got) != 1 || !strings.Contains(got[0].Message, "no further validation rules will be run due to call cost exceeds limit") {
		t.Fatalf("causes = %v", got)
	}
}

// TestFormattedValues checks that strings of formats date-time, duration
// and byte are timestamps, durations and bytes in rules, as in kube.
func TestFormattedValues(t *testing.T) {
	s := mustRules(t, `{"type":"object","properties":{
	 "at":{"type":"string","format":"date-time","x-kubernetes-validations":[{"rule":"self > timestamp('2020-01-01T00:00:00Z')"}]},
	 "every":{"type":"string","format":"duration","x-kubernetes-validations":[{"rule":"self >= duration('1m')"}]},
	 "data":{"type":"string","format":"byte","x-kubernetes-validations":[{"rule":"size(self) == 2"}]}}}`)
	ok := map[string]any{"at": "2021-01-01T00:00:00Z", "every": "90s", "data": "AAE="}
	if got := s.ValidateRules(context.Background(), ok, nil); got != nil {
		t.Errorf("valid values: %v", got)
	}
	bad := map[string]any{"at": "2019-01-01T00:00:00Z", "every": "5s", "data": "AA=="}
	if got := s.ValidateRules(context.Background(), bad, nil); len(got) != 3 {
		t.Errorf("invalid values: %v, want 3 causes", got)
	}
}
