package protobuf

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/listwatch/listwatch/client/api"
)

// crdDocs join docs (round trip and fuzz seeds): CustomResourceDefinitions
// in the form Decode returns, every field and union shape set somewhere.
// Raw JSON values hold no numbers: Decode gives them as json.Number.
var crdDocs = map[string]string{
	"empty crd": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{},
		"spec":{"group":"","names":{"plural":"","kind":""},"scope":"","versions":null},
		"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":null}}`,
	"crd": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
		"spec":{"group":"example.com","scope":"Namespaced","preserveUnknownFields":true,
			"names":{"plural":"widgets","singular":"widget","shortNames":["wd"],"kind":"Widget","listKind":"WidgetList","categories":["all"]},
			"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],
				"clientConfig":{"service":{"namespace":"ns","name":"svc","path":"/convert","port":443},"caBundle":"AAEC","url":"https://x"}}},
			"versions":[{"name":"v1","served":true,"storage":true,"deprecated":true,"deprecationWarning":"old",
				"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}},
				"additionalPrinterColumns":[{"name":"R","type":"integer","format":"int32","description":"d","priority":1,"jsonPath":".spec.replicas"}],
				"selectableFields":[{"jsonPath":".spec.color"}],
				"schema":{"openAPIV3Schema":{"id":"i","$schema":"s","$ref":"#/r","description":"d","type":"object","title":"t",
					"required":["spec"],"nullable":true,"x-kubernetes-preserve-unknown-fields":false,"x-kubernetes-embedded-resource":true,
					"x-kubernetes-int-or-string":true,"x-kubernetes-list-map-keys":["k"],"x-kubernetes-list-type":"map","x-kubernetes-map-type":"atomic",
					"x-kubernetes-validations":[{"rule":"self.a > 0","message":"m","messageExpression":"'x'","reason":"FieldValueInvalid","fieldPath":".a","optionalOldSelf":true},{"rule":""}],
					"externalDocs":{"description":"d","url":"u"},"default":{"a":"b","c":[true,null]},"example":"ex","enum":["a",null,{"k":"v"}],
					"maximum":100.5,"exclusiveMaximum":true,"minimum":-0.25,"exclusiveMinimum":true,"multipleOf":0.5,
					"maxLength":63,"minLength":0,"pattern":"^a","maxItems":3,"minItems":1,"uniqueItems":true,"maxProperties":9,"minProperties":1,
					"items":{"type":"string"},"allOf":[{}],"oneOf":[{"type":"string"},{}],"anyOf":[{"not":{"type":"null"}}],"not":{"items":[{"type":"string"},{}]},
					"properties":{"a":{"additionalProperties":false},"b":{"additionalProperties":true},"c":{"additionalProperties":{"type":"string"}},"":{}},
					"patternProperties":{"^x-":{"additionalItems":{"type":"string"}}},"definitions":{"d":{"additionalItems":false}},
					"dependencies":{"a":["b","c"],"d":{"type":"string"},"e":null}}}}]},
		"status":{"conditions":[{"type":"Established","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"InitialNamesAccepted","message":"m","observedGeneration":2},
				{"type":"","status":"","lastTransitionTime":null}],
			"acceptedNames":{"plural":"widgets","kind":"Widget"},"storedVersions":["v1"],"observedGeneration":2}}`,
	"crd list": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinitionList","metadata":{"resourceVersion":"5"},
		"items":[{"metadata":{"name":"a"},"spec":{"group":"g","names":{"plural":"as","kind":"A"},"scope":"Cluster",
			"versions":[{"name":"v1","served":false,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]},
			"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":null}}]}`,
}

func init() { maps.Copy(docs, crdDocs) }

// crdWithSchema returns a CustomResourceDefinition whose one version's
// openAPIV3Schema is props, in the JSON form.
func crdWithSchema(props map[string]any) map[string]any {
	return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"spec": map[string]any{"versions": []any{map[string]any{"schema": map[string]any{"openAPIV3Schema": props}}}}}
}

// schemaOf returns the openAPIV3Schema of crdWithSchema's object.
func schemaOf(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	spec, _ := obj["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) != 1 {
		t.Fatalf("versions = %v", spec["versions"])
	}
	props, _ := versions[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
	return props
}

// TestRawJSONNumbers: default, example and enum keep their numbers' digits,
// beyond what a float64 holds, both ways.
func TestRawJSONNumbers(t *testing.T) {
	const big = "12345678901234567891"
	props := map[string]any{"default": json.Number(big), "example": []any{json.Number("1.50")},
		"enum": []any{json.Number("-0"), nil}}
	data, err := Encode(crdWithSchema(props))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(props, schemaOf(t, obj)); diff != "" {
		t.Errorf("Decode(Encode) (-want +got):\n%s", diff)
	}
}

// TestUnionForms: what each JSON form of a union encodes to, checked by
// decoding it back, and the forms Encode rejects.
func TestUnionForms(t *testing.T) {
	tests := []struct {
		name     string
		in, want any // want nil: in
	}{
		{name: "items schema", in: map[string]any{"items": map[string]any{"type": "string"}}},
		{name: "items list", in: map[string]any{"items": []any{map[string]any{}, map[string]any{"type": "string"}}}},
		{name: "items empty list", in: map[string]any{"items": []any{}}, want: map[string]any{"items": nil}},
		{name: "items null", in: map[string]any{"items": nil}, want: map[string]any{}},
		{name: "additionalProperties schema", in: map[string]any{"additionalProperties": map[string]any{}}},
		{name: "additionalProperties false", in: map[string]any{"additionalProperties": false}},
		{name: "dependencies", in: map[string]any{"dependencies": map[string]any{
			"list": []any{"a"}, "schema": map[string]any{"type": "string"}, "null": nil, "empty": []any{}}},
			want: map[string]any{"dependencies": map[string]any{
				"list": []any{"a"}, "schema": map[string]any{"type": "string"}, "null": nil, "empty": nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := Encode(crdWithSchema(tt.in.(map[string]any)))
			if err != nil {
				t.Fatal(err)
			}
			obj, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = tt.in
			}
			if diff := cmp.Diff(want, any(schemaOf(t, obj))); diff != "" {
				t.Errorf("Decode(Encode) (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []map[string]any{
		{"items": true}, {"additionalProperties": []any{}}, {"dependencies": map[string]any{"a": false}},
		{"maximum": "1"}, {"default": func() {}},
	} {
		if _, err := Encode(crdWithSchema(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Encode(%v) error = %v, want ErrInvalid", bad, err)
		}
	}
}

// nest returns inner wrapped in one length-delimited field per number,
// the first outermost, in one pass (wrapping level by level would copy
// the bytes once per level).
func nest(nums []protowire.Number, inner []byte) []byte {
	sizes := make([]int, len(nums)+1) // sizes[i]: the body of level i
	sizes[len(nums)] = len(inner)
	for i := len(nums) - 1; i >= 0; i-- {
		sizes[i] = protowire.SizeTag(nums[i]) + protowire.SizeBytes(sizes[i+1])
	}
	b := make([]byte, 0, sizes[0])
	for i, num := range nums {
		b = protowire.AppendVarint(protowire.AppendTag(b, num, protowire.BytesType), uint64(sizes[i+1]))
	}
	return append(b, inner...)
}

// schemaPath leads from a CustomResourceDefinition to its first version's
// openAPIV3Schema, an object at depth 6 of the JSON (spec, versions, the
// version, schema, openAPIV3Schema).
var schemaPath = []protowire.Number{2, 7, 4, 1}

// TestDecodeDepth: Decode builds objects up to api.MaxDepth levels and
// fails with ErrTooDeep past it, through nested messages, through the
// arrays and maps that hold them, and through raw JSON.
func TestDecodeDepth(t *testing.T) {
	const schemaDepth = 6
	repeat := func(num protowire.Number, n int) []protowire.Number {
		nums := make([]protowire.Number, n)
		for i := range nums {
			nums[i] = num
		}
		return nums
	}
	not := func(levels int) []byte { // levels of "not" below the openAPIV3Schema
		return nest(append(schemaPath, repeat(28, levels)...), nil)
	}
	// "required", an array of strings, one level below its object.
	notRequired := func(levels int) []byte {
		return nest(append(schemaPath, repeat(28, levels)...), appendString(nil, 23, "a"))
	}
	// a map entry of "properties" under each object: two levels each.
	properties := func(pairs int) []byte {
		var nums []protowire.Number
		for range pairs {
			nums = append(nums, 29, 2)
		}
		return nest(append(schemaPath, nums...), nil)
	}
	rawDefault := func(arrays int) []byte {
		raw := strings.Repeat("[", arrays) + strings.Repeat("]", arrays)
		return nest(append(schemaPath, 8), appendString(nil, 1, raw))
	}
	tests := []struct {
		name    string
		data    []byte
		tooDeep bool
	}{
		{"not at the limit", not(api.MaxDepth - schemaDepth), false},
		{"not past the limit", not(api.MaxDepth - schemaDepth + 1), true},
		{"array at the limit", notRequired(api.MaxDepth - schemaDepth - 1), false},
		{"array past the limit", notRequired(api.MaxDepth - schemaDepth), true},
		{"maps at the limit", properties((api.MaxDepth - schemaDepth) / 2), false},
		{"maps past the limit", properties((api.MaxDepth-schemaDepth)/2 + 1), true},
		{"raw JSON at the limit", rawDefault(api.MaxDepth - schemaDepth), false},
		{"raw JSON past the limit", rawDefault(api.MaxDepth - schemaDepth + 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", tt.data))
			if tt.tooDeep != errors.Is(err, ErrTooDeep) || !tt.tooDeep && err != nil {
				t.Errorf("Decode error = %v, want too deep: %v", err, tt.tooDeep)
			}
		})
	}
	// The error names the outermost and innermost levels only.
	_, err := Decode(envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", not(api.MaxDepth)))
	want := "decoding apiextensions.k8s.io/v1 CustomResourceDefinition: spec: versions: [0]: schema: openAPIV3Schema: " +
		"not: not: not: (9984 more): not: not: not: not: not: not: not: not: protobuf: nested too deep: more than 10000 levels"
	if err == nil || err.Error() != want {
		t.Errorf("Decode error = %v\nwant %s", err, want)
	}
}
