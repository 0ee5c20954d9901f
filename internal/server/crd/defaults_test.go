package crd

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/apierror"
)

// TestSchemaDefinitionChecks: causes kube's ValidateCustomResourceDefinition
// gives (recorded from it; test/interop's TestStructuralSchemaAsKube
// computes them) for defaults, items arrays and the root of a schema
// served with status.
func TestSchemaDefinitionChecks(t *testing.T) {
	const p = "s"
	for _, tt := range []struct {
		name, schema string
		status       bool
		want         []string // "field: message", sorted
	}{
		{"default type", `{"type":"object","properties":{"a":{"type":"integer","default":"x"}}}`, false,
			[]string{`s.properties[a].default: Invalid value: "string":  in body must be of type integer: "string"`}},
		{"default nested", `{"type":"object","properties":{"c":{"type":"object","properties":{"x":{"type":"string","maxLength":2}},"default":{"x":"long"}}}}`, false,
			[]string{`s.properties[c].default.x: Too long: may not be more than 2 bytes`}},
		{"default unknown", `{"type":"object","properties":{"f":{"type":"object","properties":{"x":{"type":"number"}},"default":{"x":1.0,"y":2.50}}}}`, false,
			[]string{`s.properties[f].default: Invalid value: {"x":1,"y":2.5}: must not have unknown fields`}},
		{"default rule", `{"type":"object","properties":{"a":{"type":"integer","default":1,"x-kubernetes-validations":[{"rule":"self > 1","message":"too small"}]}}}`, false,
			[]string{`s.properties[a].default: Invalid value: 1: too small`}},
		{"default create rule", `{"type":"object","properties":{"c":{"type":"string","default":"v","x-kubernetes-validations":[{"rule":"oldSelf.hasValue()","optionalOldSelf":true,"message":"needs an old value"}]}}}`, false,
			[]string{`s.properties[c].default: Invalid value: "v": needs an old value`}},
		{"default embedded", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"default":[{"apiVersion":"v1"}]}}}`, false,
			[]string{`s.properties[l].default[0].kind: Required value`}},
		{"default hides rules", `{"type":"object","properties":{"a":{"type":"integer","default":"x"},"b":{"type":"string","x-kubernetes-validations":[{"rule":"self +"}]}}}`, false,
			[]string{`s.properties[a].default: Invalid value: "string":  in body must be of type integer: "string"`}},
		{"default in metadata", `{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","default":"a/b"}}}}}`, false,
			[]string{
				`s.properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata`,
				`s.properties[metadata].properties[name].default: Invalid value: "a/b": must result in valid metadata: metadata.name: Invalid value: "a/b": may not contain '/'`,
			}},
		{"default null", `{"type":"object","properties":{"a":{"type":"integer","default":null}}}`, false, nil},
		{"items array", `{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string","uniqueItems":true}]},"b":{"type":"array","items":[],"x-kubernetes-preserve-unknown-fields":true}}}`, false,
			[]string{
				`s.properties[a].items: Forbidden: items must be a schema object and not an array`,
				`s.properties[a].items[0].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic`,
			}},
		{"status root allowed", `{"type":"object","description":"d","properties":{"spec":{"type":"object","default":{}}},"x-kubernetes-preserve-unknown-fields":true}`, true, nil},
		{"status root type", `{"type":"string","anyOf":[{"maxLength":1}]}`, true,
			[]string{
				`s.type: Invalid value: "string": must be object at the root`,
				`s.type: Invalid value: "string": only "object" is allowed as the type at the root of the schema if the status subresource is enabled`,
			}},
		{"status root field", `{"type":"object","x-kubernetes-list-map-keys":[]}`, true,
			[]string{`s: Invalid value: {"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":null,"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":[],"XListType":null,"XMapType":null,"XValidations":null}: only ` + allowedAtStatusRoot + ` fields are allowed at the root of the schema if the status subresource is enabled`}},
		{"status root nulls", `{"type":"object","default":null,"nullable":false,"enum":null}`, true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var v version
			if err := json.Unmarshal([]byte(`{"schema":{"openAPIV3Schema":`+tt.schema+`}}`), &v); err != nil {
				t.Fatal(err)
			}
			var c checker
			c.schema(p, &v, tt.status)
			var got []string
			for _, x := range c.causes {
				got = append(got, x.Field+": "+x.Message)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", strings.ReplaceAll(diff, `\"`, `"`))
			}
		})
	}
}

// TestStatusRootBounded: the schema the status root's cause quotes is
// written only as far as the server keeps a cause, however deep and large
// (a schema 1,000 levels deep over 2 MiB of description cost a minute
// when decoded into its Go form level by level).
func TestStatusRootBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","nullable":true,"properties":{"a":`)
	for range 1000 {
		b.WriteString(`{"type":"object","properties":{"a":`)
	}
	b.WriteString(`{"type":"string","description":"` + strings.Repeat("x", 2<<20) + `"}`)
	b.WriteString(strings.Repeat("}}", 1000) + "}}")
	var c checker
	c.statusRoot([]byte(b.String()), "s")
	const prefix = `Invalid value: {"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":true,`
	if len(c.causes) != 1 || !strings.HasPrefix(c.causes[0].Message, prefix) || len(c.causes[0].Message) > 2*utf8.UTFMax*apierror.MaxCauseRunes {
		t.Fatalf("causes %d, the first %d bytes", len(c.causes), len(c.causes[0].Message))
	}
}
