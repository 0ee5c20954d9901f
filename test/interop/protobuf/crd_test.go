package protobuf_test

import (
	"encoding/json"
	"math"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/yaml"
)

// gatewaysCRD returns the real-world definition in testdata (Gateway API's
// gateways, see the file's header), as the apiextensions clientset would
// send it.
func gatewaysCRD() *apiextensionsv1.CustomResourceDefinition {
	data, err := os.ReadFile("../testdata/crds/gateways.yaml")
	if err != nil {
		panic(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		panic(err)
	}
	return &crd
}

// crdCases are the CustomResourceDefinitions the equivalence tests try.
func crdCases() []testCase {
	props := func(p apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &p}}}}}
	}
	raw := func(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
	gateways := gatewaysCRD()
	full := gatewaysCRD()
	full.ObjectMeta = fullMeta
	full.Spec.PreserveUnknownFields = true
	full.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1", ""},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr("https://c"), CABundle: []byte{0, 1, 0xff},
				Service: &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr(""), Port: ptr[int32](-1)}}}}
	v := &full.Spec.Versions[0]
	v.Deprecated, v.DeprecationWarning = true, ptr("")
	v.Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{LabelSelectorPath: ptr("")}
	v.SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.x"}, {}}
	full.Status = apiextensionsv1.CustomResourceDefinitionStatus{
		Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionTrue, LastTransitionTime: created, Reason: "r", Message: "m", ObservedGeneration: -2}, {}},
		AcceptedNames: gateways.Spec.Names, StoredVersions: []string{"v1beta1", "v1"}, ObservedGeneration: 1 << 53}

	cs := []testCase{
		{"crd/empty", &apiextensionsv1.CustomResourceDefinition{}, true},
		{"crd/gateway api gateways", gateways, true},
		{"crd/full", full, true},
		{"crd/every schema field", props(apiextensionsv1.JSONSchemaProps{ID: "i", Schema: "s", Ref: ptr(""), Description: "d",
			Type: "object", Format: "f", Title: "t", Default: raw(`{"a":[1,2.5,null]}`), Maximum: ptr(math.Copysign(0, -1)), ExclusiveMaximum: true,
			Minimum: ptr(1e300), ExclusiveMinimum: true, MaxLength: ptr[int64](0), MinLength: ptr[int64](-1), Pattern: "^x",
			MaxItems: ptr[int64](1 << 53), MinItems: ptr[int64](2), UniqueItems: true, MultipleOf: ptr(0.1),
			Enum:          []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`-7.5`)}, {Raw: []byte(`{}`)}},
			MaxProperties: ptr[int64](3), MinProperties: ptr[int64](0), Required: []string{"a", ""},
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{JSONSchemas: []apiextensionsv1.JSONSchemaProps{{}, {Type: "string"}}},
			AllOf: []apiextensionsv1.JSONSchemaProps{{}},
			OneOf: []apiextensionsv1.JSONSchemaProps{{Not: &apiextensionsv1.JSONSchemaProps{}}},
			AnyOf: []apiextensionsv1.JSONSchemaProps{{Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{}}}},
			Not:   &apiextensionsv1.JSONSchemaProps{Nullable: true},
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"": {}, "b": {AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{}},
				"c": {AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true}}},
			AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "integer"}},
			PatternProperties:    map[string]apiextensionsv1.JSONSchemaProps{"^a": {Type: "string"}},
			Dependencies: apiextensionsv1.JSONSchemaDependencies{"a": {Property: []string{"b", ""}},
				"c": {Schema: &apiextensionsv1.JSONSchemaProps{}}},
			AdditionalItems: &apiextensionsv1.JSONSchemaPropsOrBool{},
			Definitions:     apiextensionsv1.JSONSchemaDefinitions{"d": {}},
			ExternalDocs:    &apiextensionsv1.ExternalDocumentation{Description: "d", URL: "u"},
			Example:         raw(`"ünïcödé"`), Nullable: true, XPreserveUnknownFields: ptr(false), XEmbeddedResource: true,
			XIntOrString: true, XListMapKeys: []string{"k"}, XListType: ptr("map"), XMapType: ptr(""),
			XValidations: apiextensionsv1.ValidationRules{{Rule: "self > 0", Message: "m", MessageExpression: "'e'",
				Reason: ptr(apiextensionsv1.FieldValueForbidden), FieldPath: ".a", OptionalOldSelf: ptr(true)}, {}},
		}), true},
		{"crdlist", &apiextensionsv1.CustomResourceDefinitionList{ListMeta: metav1.ListMeta{ResourceVersion: "3"},
			Items: []apiextensionsv1.CustomResourceDefinition{*gateways, {}}}, true},
		// Not exact: JSON has one form for what protobuf holds in two.
		{"crd/empty unions", props(apiextensionsv1.JSONSchemaProps{Items: &apiextensionsv1.JSONSchemaPropsOrArray{},
			Dependencies: apiextensionsv1.JSONSchemaDependencies{"e": {}}, Default: &apiextensionsv1.JSON{}}), false},
		{"crd/both sides of unions", props(apiextensionsv1.JSONSchemaProps{
			Items:           &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{}, JSONSchemas: []apiextensionsv1.JSONSchemaProps{{}}},
			AdditionalItems: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{}},
			Dependencies:    apiextensionsv1.JSONSchemaDependencies{"a": {Schema: &apiextensionsv1.JSONSchemaProps{}, Property: []string{"x"}}}}), false},
		{"crd/raw JSON unsorted, spaced, HTML", props(apiextensionsv1.JSONSchemaProps{Default: raw(`{ "b": 1, "a": "<&>" }`),
			Enum: []apiextensionsv1.JSON{{Raw: []byte{}}, {}}}), false},
		{"crd/empty caBundle", &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Conversion: &apiextensionsv1.CustomResourceConversion{Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: []byte{}}}}}}, false},
	}
	return cs
}

// maxSchemaDepth is how deep the random schemas nest: each level holds
// about twenty schemas.
const maxSchemaDepth = 2

// schemaFuncs fill apiextensions/v1 types within what their JSON form
// carries exactly: unions with one side set, raw JSON compact with sorted
// keys, no empty caBundle; schemas nest at most maxSchemaDepth levels.
func schemaFuncs() []any {
	depth := 0
	props := func(c randfill.Continue) *apiextensionsv1.JSONSchemaProps {
		p := new(apiextensionsv1.JSONSchemaProps)
		c.Fill(p)
		return p
	}
	return []any{
		func(p *apiextensionsv1.JSONSchemaProps, c randfill.Continue) {
			if depth == maxSchemaDepth {
				c.Fill(&p.Type)
				c.Fill(&p.Maximum)
				c.Fill(&p.Default)
				c.Fill(&p.XListType)
				return
			}
			depth++
			defer func() { depth-- }()
			c.FillNoCustom(p)
		},
		func(u *apiextensionsv1.JSONSchemaPropsOrArray, c randfill.Continue) {
			if c.Bool() {
				u.Schema = props(c)
				return
			}
			for range 1 + c.Intn(2) {
				u.JSONSchemas = append(u.JSONSchemas, *props(c))
			}
		},
		func(u *apiextensionsv1.JSONSchemaPropsOrBool, c randfill.Continue) {
			if u.Allows = c.Bool(); u.Allows && c.Bool() {
				u.Schema = props(c)
			}
		},
		func(u *apiextensionsv1.JSONSchemaPropsOrStringArray, c randfill.Continue) {
			if c.Bool() {
				u.Schema = props(c)
				return
			}
			u.Property = []string{c.String(0)}
		},
		func(j *apiextensionsv1.JSON, c randfill.Continue) {
			values := []any{c.String(0), c.Bool(), c.Intn(2000) - 1000, map[string]string{c.String(0): c.String(0)}, []any{nil, c.Float64()}}
			raw, err := json.Marshal(values[c.Intn(len(values))])
			if err != nil {
				panic(err)
			}
			j.Raw = raw
		},
		func(w *apiextensionsv1.WebhookClientConfig, c randfill.Continue) {
			c.FillNoCustom(w)
			if len(w.CABundle) == 0 {
				w.CABundle = nil // JSON leaves an empty one out
			}
		},
	}
}
