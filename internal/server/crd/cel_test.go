package crd

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
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
			got := s.ValidateRules(context.Background(), tt.obj, tt.old)
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
		{"optionalOldSelf without oldSelf", `{"type":"object","x-kubernetes-validations":[{"rule":"true","optionalOldSelf":false}]}`,
			"s.x-kubernetes-validations[0].optionalOldSelf", "Invalid value: false: may not be set if oldSelf is not used in rule"},
		{"optional oldSelf without optionalOldSelf", `{"type":"object","x-kubernetes-validations":[{"rule":"oldSelf.hasValue()"}]}`,
			"s.x-kubernetes-validations[0].rule", "compilation failed"},
		{"oldSelf in a set", `{"type":"object","properties":{"l":{"type":"array","maxItems":4,"x-kubernetes-list-type":"set","items":{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string","maxLength":4,"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}}}}}}}`,
			"s.properties[l].items.properties[m].additionalProperties.x-kubernetes-validations[0].rule", "oldSelf cannot be used on the uncorrelatable portion of the schema within s.properties[l]"},
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

// updateSchema has a plain rule, transition rules on the items of a list-type
// map, a plain rule on the items of an atomic list and optionalOldSelf rules.
const updateSchema = `{"type":"object","properties":{
 "spec":{"type":"object","properties":{"a":{"type":"string","maxLength":10,"x-kubernetes-validations":[{"rule":"self != 'bad'"}]},"b":{"type":"string","maxLength":10}}},
 "ports":{"type":"array","maxItems":10,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
  "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string","maxLength":10},"port":{"type":"integer"}},
   "x-kubernetes-validations":[{"rule":"self.port >= oldSelf.port","message":"port may only grow"}]}},
 "tags":{"type":"array","maxItems":10,"items":{"type":"string","maxLength":10,"x-kubernetes-validations":[{"rule":"self != 'bad'"}]}},
 "mode":{"type":"string","maxLength":10,"x-kubernetes-validations":[
  {"rule":"!oldSelf.hasValue() || oldSelf.value() == self || self == 'free'","optionalOldSelf":true,"message":"mode is fixed"},
  {"rule":"oldSelf.hasValue() || self != 'late'","optionalOldSelf":true,"message":"late only on update"}]}}}`

// TestValidateRulesOnUpdate checks kube's semantics of rules on update:
// failures on unchanged values ratchet, oldSelf pairs list-type map items
// by key, optionalOldSelf rules run without an old value; a failure let
// through by ratcheting is a warning with kube's field error text.
func TestValidateRulesOnUpdate(t *testing.T) {
	s := mustRules(t, updateSchema)
	obj := func(raw string) map[string]any {
		o, err := api.ParseObject([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	invalid := func(field, msg string) api.StatusCause {
		return api.StatusCause{Type: api.CauseTypeFieldValueInvalid, Field: field, Message: "Invalid value: " + msg}
	}
	tests := []struct {
		name, old, obj string // old "" is a create
		want           []api.StatusCause
		warnings       []string
	}{
		{"create", "", `{"spec":{"a":"bad"},"tags":["bad"],"mode":"late"}`, []api.StatusCause{
			invalid("mode", `"late": late only on update`), invalid("spec.a", `"bad": failed rule: self != 'bad'`), invalid("tags[0]", `"bad": failed rule: self != 'bad'`)}, nil},
		{"unchanged invalid value ratchets", `{"spec":{"a":"bad","b":"x"}}`, `{"spec":{"a":"bad","b":"y"}}`, nil,
			[]string{`spec.a: Invalid value: "bad": failed rule: self != 'bad'`}},
		{"changed to invalid", `{"spec":{"a":"good"}}`, `{"spec":{"a":"bad"}}`, []api.StatusCause{invalid("spec.a", `"bad": failed rule: self != 'bad'`)}, nil},
		{"atomic list unchanged ratchets its items", `{"tags":["bad"],"spec":{"b":"x"}}`, `{"tags":["bad"],"spec":{"b":"y"}}`, nil,
			[]string{`tags[0]: Invalid value: "bad": failed rule: self != 'bad'`}},
		{"atomic list changed", `{"tags":["bad"]}`, `{"tags":["bad","ok"]}`, []api.StatusCause{invalid("tags[0]", `"bad": failed rule: self != 'bad'`)}, nil},
		{"map list items by key", `{"ports":[{"name":"x","port":1},{"name":"y","port":5}]}`, `{"ports":[{"name":"y","port":4},{"name":"x","port":1},{"name":"z","port":0}]}`, []api.StatusCause{
			invalid("ports[0]", "port may only grow")}, nil},
		{"optionalOldSelf with an old value", `{"mode":"a"}`, `{"mode":"late"}`, []api.StatusCause{invalid("mode", `"late": mode is fixed`)}, nil},
		{"optionalOldSelf without one", `{"spec":{}}`, `{"mode":"late"}`, []api.StatusCause{invalid("mode", `"late": late only on update`)}, nil},
		{"optionalOldSelf unchanged", `{"mode":"late"}`, `{"mode":"late"}`, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var old map[string]any
			if tt.old != "" {
				old = obj(tt.old)
			}
			header := http.Header{}
			ctx := apierror.WithWarnings(context.Background(), apierror.NewWarnings(header))
			got := s.ValidateRules(ctx, obj(tt.obj), old)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
			var warnings []string
			for _, h := range header.Values("Warning") {
				w, err := strconv.Unquote(strings.TrimPrefix(h, "299 - "))
				if err != nil {
					t.Fatalf("Warning %q: %v", h, err)
				}
				warnings = append(warnings, w)
			}
			if diff := cmp.Diff(tt.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRuntimeBudgetPerRequest checks that an update's rules share one
// budget, as kube's: the plain and the transition rules cost about 5.6M
// each, every call within the limit of one, over 10M together.
func TestRuntimeBudgetPerRequest(t *testing.T) {
	scan := strings.Repeat(" && self.s.matches('^[a-z]*$')", 4)[4:]
	rules := make([]string, 14)
	for i := range 7 {
		rules[i] = fmt.Sprintf(`{"rule":%q}`, scan)
		rules[7+i] = fmt.Sprintf(`{"rule":%q}`, scan+" && self.s != oldSelf.s")
	}
	s := mustRules(t, `{"type":"object","properties":{"s":{"type":"string","maxLength":1000000}},
	 "x-kubernetes-validations":[`+strings.Join(rules, ",")+`]}`)
	obj := map[string]any{"s": strings.Repeat("a", 1000000)}
	if got := s.ValidateRules(context.Background(), obj, nil); got != nil {
		t.Fatalf("create: %v", got)
	}
	got := s.ValidateRules(context.Background(), obj, map[string]any{"s": "b"})
	want := []api.StatusCause{{Type: api.CauseTypeFieldValueInvalid, Field: "<nil>", Message: `Invalid value: "object": validation failed due to running out of cost budget, no further validation rules will be run`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("update causes (-want +got):\n%s", diff)
	}
}

// TestRulesStopAtDeadline checks that a rule whose time the cost budget
// does not bound (a comprehension of 50k steps, quadratic in cel-go's cost
// tracking) stops at the context's deadline.
func TestRulesStopAtDeadline(t *testing.T) {
	s := mustRules(t, `{"type":"object","properties":{"l":{"type":"array","maxItems":200000,"items":{"type":"integer"}}},"x-kubernetes-validations":[{"rule":"self.l.all(x, x >= 0)"}]}`)
	l := make([]any, 50000)
	for i := range l {
		l[i] = int64(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := s.ValidateRules(ctx, map[string]any{"l": l}, nil)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("rules took %v, past their deadline", d)
	}
	if len(got) != 1 || !strings.Contains(got[0].Message, "operation interrupted") {
		t.Errorf("causes = %v, want the rule interrupted", got)
	}
}

// TestRulesStopWithRequest checks that a resource's validators evaluate
// rules under the request's context: a request gone stops its rules.
func TestRulesStopWithRequest(t *testing.T) {
	s := mustRules(t, `{"type":"object","properties":{"l":{"type":"array","maxItems":1000,"items":{"type":"integer"}}},"x-kubernetes-validations":[{"rule":"self.l.all(x, x >= 0)"}]}`)
	create, update := s.validators()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// cel-go looks at the context every 100 steps of a comprehension.
	obj := api.Object{"l": make([]any, 1000)}
	for i := range obj["l"].([]any) {
		obj["l"].([]any)[i] = int64(i)
	}
	for name, got := range map[string][]api.StatusCause{"create": create(ctx, obj), "update": update(ctx, obj, api.Object{"l": []any{}})} {
		if len(got) != 1 || !strings.Contains(got[0].Message, "operation interrupted") {
			t.Errorf("%s: causes = %v, want the rule interrupted", name, got)
		}
	}
	if got := create(context.Background(), obj); got != nil {
		t.Errorf("create with a live request: %v", got)
	}
}
