package crd

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

func mustSchema(t testing.TB, s string) *Schema {
	t.Helper()
	schema, err := ParseSchema([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

func mustObject(t testing.TB, s string) api.Object {
	t.Helper()
	obj, err := api.ParseObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestPruneAndDefault(t *testing.T) {
	schema := mustSchema(t, `{"type":"object","properties":{
		"spec":{"type":"object","properties":{
			"size":{"type":"string","default":"M"},
			"opts":{"type":"object","default":{"a":1},"properties":{"a":{"type":"integer"},"b":{"type":"integer","default":2}}},
			"gone":{"type":"string"},
			"keep":{"type":"string","nullable":true},
			"items":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}}}},
			"free":{"type":"object","additionalProperties":true},
			"any":{"x-kubernetes-preserve-unknown-fields":true},
			"port":{"x-kubernetes-int-or-string":true}}}}}`)
	tests := []struct {
		name, in, out string
		unknown       []string
	}{
		{"defaults fill absent fields, nested too", `{"spec":{}}`, `{"spec":{"size":"M","opts":{"a":1,"b":2}}}`, nil},
		{"null takes the default or is dropped", `{"spec":{"size":null,"gone":null,"keep":null}}`, `{"spec":{"size":"M","opts":{"a":1,"b":2},"keep":null}}`, nil},
		{"unknown fields are dropped with their paths", `{"kind":"W","apiVersion":"x/v1","metadata":{"name":"n","bogus":1},"spec":{"size":"S","opts":{"a":5,"b":1},"z":1,"items":[{"x":"a","y":1}]},"top":1}`,
			`{"kind":"W","apiVersion":"x/v1","metadata":{"name":"n"},"spec":{"size":"S","opts":{"a":5,"b":1},"items":[{"x":"a"}]}}`,
			[]string{"metadata.bogus", "spec.items[0].y", "spec.z", "top"}},
		{"preserved and free-form fields stay", `{"spec":{"size":"S","opts":{},"free":{"q":{"r":1}},"any":{"s":[1]}}}`,
			`{"spec":{"size":"S","opts":{"b":2},"free":{"q":{"r":1}},"any":{"s":[1]}}}`, nil},
		{"objects where no object belongs keep no field", `{"spec":{"size":{"u":1},"port":{"t":1},"opts":[{"a":1}]}}`,
			`{"spec":{"size":{},"port":{},"opts":[{}]}}`, []string{"spec.opts[0].a", "spec.port.t", "spec.size.u"}},
		{"values of the wrong type are left to validation", `{"spec":"text"}`, `{"spec":"text"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustObject(t, tt.in)
			unknown := schema.PruneAndDefault(obj)
			if diff := cmp.Diff(tt.unknown, unknown); diff != "" {
				t.Errorf("unknown (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(mustObject(t, tt.out), obj); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultsNotShared checks that objects get copies of a default, which
// is decoded once: changing one object's defaulted map or list changes no
// other's.
func TestDefaultsNotShared(t *testing.T) {
	schema := mustSchema(t, `{"type":"object","properties":{"spec":{"type":"object","properties":{
		"opts":{"type":"object","default":{"a":{"b":1}},"x-kubernetes-preserve-unknown-fields":true},
		"list":{"type":"array","default":[{"c":2}],"items":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}}`)
	first, second := mustObject(t, `{"spec":{}}`), mustObject(t, `{"spec":{}}`)
	schema.PruneAndDefault(first)
	spec := first["spec"].(map[string]any)
	spec["opts"].(map[string]any)["a"].(map[string]any)["b"] = 9
	spec["list"].([]any)[0].(map[string]any)["c"] = 9
	schema.PruneAndDefault(second)
	if diff := cmp.Diff(mustObject(t, `{"spec":{"opts":{"a":{"b":1}},"list":[{"c":2}]}}`), second); diff != "" {
		t.Errorf("second object (-want +got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	schema := mustSchema(t, `{"type":"object","properties":{"spec":{"type":"object","minProperties":1,"properties":{
		"name":{"type":"string","minLength":3},
		"list":{"type":"array","minItems":2,"items":{"type":"string"}},
		"low":{"type":"number","minimum":0,"exclusiveMinimum":true},
		"even":{"type":"integer","multipleOf":2,"format":"int32"},
		"id":{"type":"string","format":"uuid"},
		"num":{"type":"number","enum":[1,2.5]}}}}}`)
	tests := []validateCase{
		{"valid", `{"spec":{"name":"abc","list":["a","b"],"low":0.5,"even":4,"id":"123e4567-e89b-12d3-a456-426614174000","num":2.5}}`, nil},
		{"integral floats are integers", `{"spec":{"even":4.0}}`, nil},
		{"every violation", `{"spec":{"name":"ab","list":[null],"low":0,"even":3000000001,"id":"x","num":3}}`, []string{
			`<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.even`,
			`spec.even: Invalid value: 3000000001: spec.even in body should be a multiple of 2`,
			`spec.id: Invalid value: "x": spec.id in body must be of type uuid: "x"`,
			`spec.list: Invalid value: 1: spec.list in body should have at least 2 items`,
			`spec.list[0]: Invalid value: "null": spec.list[0] in body must be of type string: "null"`,
			`spec.low: Invalid value: 0: spec.low in body should be greater than 0`,
			`spec.name: Invalid value: "ab": spec.name in body should be at least 3 chars long`,
			`spec.num: Unsupported value: 3: supported values: "1", "2.5"`,
		}},
		{"too few properties", `{"spec":{}}`, []string{`spec: Invalid value: 0: spec in body should have at least 1 properties`}},
		{"object of the wrong type", `{"spec":[]}`, []string{`spec: Invalid value: "array": spec in body must be of type object: "array"`}},
	}
	runValidateCases(t, schema, tests)
}

// validateCase is an object and its causes, "field: message", sorted.
type validateCase struct {
	name, obj string
	causes    []string
}

func runValidateCases(t *testing.T, schema *Schema, tests []validateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range schema.Validate(mustObject(t, tt.obj)) {
				got = append(got, c.Field+": "+c.Message)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.causes, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzSchema checks that a definition's checks of a schema (served with
// status), pruning, defaulting and validation never panic on any schema
// and object, that pruning leaves nothing to prune, and that ratcheting
// lets an unchanged object through.
func FuzzSchema(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer","default":1}}}}}`), []byte(`{"spec":{"b":1}}`))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string","pattern":"^a"}}}}}}`), []byte(`{"a":[{"x":"b","y":1},null,2]}`))
	f.Add([]byte(`{"x-kubernetes-preserve-unknown-fields":true,"properties":{"m":{"type":"object","additionalProperties":{"type":"number","maximum":1,"nullable":true}}}}`), []byte(`{"m":{"k":2,"n":null},"o":{}}`))
	f.Add([]byte(`{"type":"object","properties":{"e":{"x-kubernetes-embedded-resource":true,"type":"object","properties":{"s":{"type":"string","enum":["a",1,{"b":[]}]}}}}}`), []byte(`{"e":{"metadata":{"q":1},"s":{"b":[]}},"metadata":5}`))
	f.Add([]byte(`{"type":"object","properties":{"d":{"type":"object","default":null,"properties":{"x":{"type":"integer","format":"int32","minimum":1e400}}}}}`), []byte(`{"d":{"x":1e400}}`))
	f.Add([]byte(`{"type":"object","anyOf":[{"required":["a"]}],"properties":{"a":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","oneOf":[{"not":{"required":["k"]}},{"allOf":[{"properties":{"k":{"format":"ipv4"}}}]}],"properties":{"k":{"type":"string"}}}}}}`), []byte(`{"a":[{"k":"1.2.3.4"},{"k":"1.2.3.4"},null,null,3]}`))
	f.Add([]byte(`{"type":"object","properties":{"s":{"type":"array","x-kubernetes-list-type":"set","items":{"x-kubernetes-preserve-unknown-fields":true}},"m":{"type":"object","additionalProperties":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"number","enum":[1,1.0,-0]}}}}}`), []byte(`{"s":[1,1.0,{"a":[1]},{"a":[1.0]},"1"],"m":{"x":[0,-0,1]}}`))
	f.Add([]byte(`{"type":"object","properties":{"l":{"type":"array","items":[{"type":"string","default":"x","items":[{}]}]},"d":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"a":{"type":"string"}},"default":{"a":1,"kind":2,"x":{}}}},"enum":[]}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, rawSchema, rawObject []byte) {
		var v version
		v.Schema = &struct {
			OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
		}{rawSchema}
		var c checker
		c.schema("schema", &v, true)
		schema, err := ParseSchema(rawSchema)
		if err != nil {
			return
		}
		obj, err := api.ParseObject(rawObject)
		if err != nil {
			return
		}
		schema.PruneAndDefault(obj)
		if _, err := json.Marshal(obj); err != nil {
			t.Fatalf("pruned object does not encode: %v", err)
		}
		_ = schema.Validate(obj)
		if causes := schema.ValidateUpdate(obj, obj.DeepCopy()); len(causes) > 0 {
			t.Fatalf("an unchanged object fails ratcheted validation: %v", causes)
		}
		if again := schema.PruneAndDefault(obj); len(again) > 0 {
			t.Fatalf("second pass pruned %v", again)
		}
	})
}

// TestSameValue checks ratcheting's equality against kube's DeepEqual of
// values decoded as kube decodes them: integers to int64, other numbers
// to float64.
func TestSameValue(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{`{"a":[1,{"b":2.5}]}`, `{"a":[1,{"b":2.5}]}`, true},
		{`1`, `1.0`, false},
		{`100`, `1e2`, false},
		{`1.5`, `15e-1`, true},
		{`[1]`, `[1.0]`, false},
		{`9007199254740993`, `9007199254740992`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
	} {
		a, b := mustValue(t, tt.a), mustValue(t, tt.b)
		if got := sameValue(a, b); got != tt.same {
			t.Errorf("sameValue(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}

func mustValue(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestParseSchemaDeep: a schema 1,000 additionalProperties deep over
// 2 MiB decodes in one pass: it allocates a few times its size, where
// decoding each level's subtree again allocated the 2 MiB a thousand times.
func TestParseSchemaDeep(t *testing.T) {
	var b strings.Builder
	for range 1000 {
		b.WriteString(`{"type":"object","additionalProperties":`)
	}
	b.WriteString(`{"type":"string","description":"` + strings.Repeat("x", 2<<20) + `"}`)
	b.WriteString(strings.Repeat("}", 1000))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := ParseSchema([]byte(b.String()))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	depth := 0
	for ; s.AdditionalProperties != nil; s = s.AdditionalProperties.Schema {
		depth++
	}
	// Decoding every level again allocated about 1,000 times the schema;
	// the bound leaves room for what other tests allocate meanwhile.
	if allocated := after.TotalAlloc - before.TotalAlloc; depth != 1000 || allocated > 64*uint64(b.Len()) {
		t.Errorf("depth %d, %d bytes allocated for a schema of %d", depth, allocated, b.Len())
	}
}
