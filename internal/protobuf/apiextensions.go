package protobuf

import (
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// apiextensions.k8s.io/v1 messages (k8s.io/apiextensions-apiserver
// pkg/apis/apiextensions/v1/generated.proto, types.go and
// types_jsonschema.go): CustomResourceDefinition, which the apiextensions
// clientset sends as protobuf, with its recursive JSONSchemaProps.
var (
	crdNames = &message{name: "CustomResourceDefinitionNames", fields: []field{
		{name: "plural", num: 1, kind: kString},
		{name: "singular", num: 2, kind: kString, omitZero: true},
		{name: "shortNames", num: 3, kind: kString, pres: repeated, omitZero: true},
		{name: "kind", num: 4, kind: kString},
		{name: "listKind", num: 5, kind: kString, omitZero: true},
		{name: "categories", num: 6, kind: kString, pres: repeated, omitZero: true},
	}}
	webhookClientConfig = &message{name: "WebhookClientConfig", fields: []field{
		{name: "service", num: 1, kind: kMessage, pres: pointer, msg: &message{name: "ServiceReference", fields: []field{
			{name: "namespace", num: 1, kind: kString},
			{name: "name", num: 2, kind: kString},
			{name: "path", num: 3, kind: kString, pres: pointer},
			{name: "port", num: 4, kind: kInt32, pres: pointer},
		}}},
		{name: "caBundle", num: 2, kind: kBytes, pres: pointer, omitZero: true},
		{name: "url", num: 3, kind: kString, pres: pointer},
	}}
	crdConversion = &message{name: "CustomResourceConversion", fields: []field{
		{name: "strategy", num: 1, kind: kString},
		{name: "webhook", num: 2, kind: kMessage, pres: pointer, msg: &message{name: "WebhookConversion", fields: []field{
			{name: "clientConfig", num: 2, kind: kMessage, pres: pointer, msg: webhookClientConfig},
			{name: "conversionReviewVersions", num: 3, kind: kString, pres: repeated},
		}}},
	}}
	crdSubresources = &message{name: "CustomResourceSubresources", fields: []field{
		{name: "status", num: 1, kind: kMessage, pres: pointer, msg: &message{name: "CustomResourceSubresourceStatus"}},
		{name: "scale", num: 2, kind: kMessage, pres: pointer, msg: &message{name: "CustomResourceSubresourceScale", fields: []field{
			{name: "specReplicasPath", num: 1, kind: kString},
			{name: "statusReplicasPath", num: 2, kind: kString},
			{name: "labelSelectorPath", num: 3, kind: kString, pres: pointer},
		}}},
	}}
	crdVersion = &message{name: "CustomResourceDefinitionVersion", fields: []field{
		{name: "name", num: 1, kind: kString},
		{name: "served", num: 2, kind: kBool},
		{name: "storage", num: 3, kind: kBool},
		{name: "schema", num: 4, kind: kMessage, pres: pointer, msg: &message{name: "CustomResourceValidation", fields: []field{
			{name: "openAPIV3Schema", num: 1, kind: kMessage, pres: pointer, msg: jsonSchemaProps},
		}}},
		{name: "subresources", num: 5, kind: kMessage, pres: pointer, msg: crdSubresources},
		{name: "additionalPrinterColumns", num: 6, kind: kMessage, pres: repeated, omitZero: true, msg: &message{name: "CustomResourceColumnDefinition", fields: []field{
			{name: "name", num: 1, kind: kString},
			{name: "type", num: 2, kind: kString},
			{name: "format", num: 3, kind: kString, omitZero: true},
			{name: "description", num: 4, kind: kString, omitZero: true},
			{name: "priority", num: 5, kind: kInt32, omitZero: true},
			{name: "jsonPath", num: 6, kind: kString},
		}}},
		{name: "deprecated", num: 7, kind: kBool, omitZero: true},
		{name: "deprecationWarning", num: 8, kind: kString, pres: pointer},
		{name: "selectableFields", num: 9, kind: kMessage, pres: repeated, omitZero: true, msg: &message{name: "SelectableField", fields: []field{
			{name: "jsonPath", num: 1, kind: kString},
		}}},
	}}
)

// crdKinds are apiextensions.k8s.io/v1's kinds, built on first use: their
// ObjectMeta and ListMeta are the data's.
var crdKinds = sync.OnceValue(func() map[string]*message {
	crd := &message{name: "CustomResourceDefinition", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: metaV1("ObjectMeta")},
		{name: "spec", num: 2, kind: kMessage, msg: &message{name: "CustomResourceDefinitionSpec", fields: []field{
			{name: "group", num: 1, kind: kString},
			{name: "names", num: 3, kind: kMessage, msg: crdNames},
			{name: "scope", num: 4, kind: kString},
			{name: "versions", num: 7, kind: kMessage, pres: repeated, msg: crdVersion},
			{name: "conversion", num: 9, kind: kMessage, pres: pointer, msg: crdConversion},
			{name: "preserveUnknownFields", num: 10, kind: kBool, omitZero: true},
		}}},
		{name: "status", num: 3, kind: kMessage, msg: &message{name: "CustomResourceDefinitionStatus", fields: []field{
			{name: "conditions", num: 1, kind: kMessage, pres: repeated, msg: &message{name: "CustomResourceDefinitionCondition", fields: []field{
				{name: "type", num: 1, kind: kString},
				{name: "status", num: 2, kind: kString},
				{name: "lastTransitionTime", num: 3, kind: kTime},
				{name: "reason", num: 4, kind: kString, omitZero: true},
				{name: "message", num: 5, kind: kString, omitZero: true},
				{name: "observedGeneration", num: 6, kind: kInt64, omitZero: true},
			}}},
			{name: "acceptedNames", num: 2, kind: kMessage, msg: crdNames},
			{name: "storedVersions", num: 3, kind: kString, pres: repeated},
			{name: "observedGeneration", num: 4, kind: kInt64, omitZero: true},
		}}},
	}}
	crdList := &message{name: "CustomResourceDefinitionList", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: metaV1("ListMeta")},
		{name: "items", num: 2, kind: kMessage, pres: repeated, msg: crd}, // null when empty: no omitempty
	}}
	return map[string]*message{crd.name: crd, crdList.name: crdList}
})

// jsonSchemaProps is JSONSchemaProps, which nests itself directly and through
// the unions JSONSchemaPropsOrArray, OrBool and OrStringArray; it is built
// by a function because package variables cannot refer to themselves.
var jsonSchemaProps = newJSONSchemaProps()

func newJSONSchemaProps() *message {
	props := &message{name: "JSONSchemaProps"}
	schema := field{name: "schema", num: 1, kind: kMessage, pres: pointer, msg: props}
	orArray := &message{name: "JSONSchemaPropsOrArray", union: true, fields: []field{
		schema,
		{name: "jSONSchemas", num: 2, kind: kMessage, pres: repeated, msg: props},
	}}
	orBool := &message{name: "JSONSchemaPropsOrBool", union: true, fields: []field{
		{name: "allows", num: 1, kind: kBool},
		{name: "schema", num: 2, kind: kMessage, pres: pointer, msg: props},
	}}
	orStringArray := &message{name: "JSONSchemaPropsOrStringArray", union: true, fields: []field{
		schema,
		{name: "property", num: 2, kind: kString, pres: repeated},
	}}
	list := func(name string, num protowire.Number) field {
		return field{name: name, num: num, kind: kMessage, pres: repeated, omitZero: true, msg: props}
	}
	props.fields = []field{
		{name: "id", num: 1, kind: kString, omitZero: true},
		{name: "$schema", num: 2, kind: kString, omitZero: true},
		{name: "$ref", num: 3, kind: kString, pres: pointer},
		{name: "description", num: 4, kind: kString, omitZero: true},
		{name: "type", num: 5, kind: kString, omitZero: true},
		{name: "format", num: 6, kind: kString, omitZero: true},
		{name: "title", num: 7, kind: kString, omitZero: true},
		{name: "default", num: 8, kind: kJSON, pres: pointer},
		{name: "maximum", num: 9, kind: kDouble, pres: pointer},
		{name: "exclusiveMaximum", num: 10, kind: kBool, omitZero: true},
		{name: "minimum", num: 11, kind: kDouble, pres: pointer},
		{name: "exclusiveMinimum", num: 12, kind: kBool, omitZero: true},
		{name: "maxLength", num: 13, kind: kInt64, pres: pointer},
		{name: "minLength", num: 14, kind: kInt64, pres: pointer},
		{name: "pattern", num: 15, kind: kString, omitZero: true},
		{name: "maxItems", num: 16, kind: kInt64, pres: pointer},
		{name: "minItems", num: 17, kind: kInt64, pres: pointer},
		{name: "uniqueItems", num: 18, kind: kBool, omitZero: true},
		{name: "multipleOf", num: 19, kind: kDouble, pres: pointer},
		{name: "enum", num: 20, kind: kJSON, pres: repeated, omitZero: true},
		{name: "maxProperties", num: 21, kind: kInt64, pres: pointer},
		{name: "minProperties", num: 22, kind: kInt64, pres: pointer},
		{name: "required", num: 23, kind: kString, pres: repeated, omitZero: true},
		{name: "items", num: 24, kind: kMessage, pres: pointer, msg: orArray},
		list("allOf", 25),
		list("oneOf", 26),
		list("anyOf", 27),
		{name: "not", num: 28, kind: kMessage, pres: pointer, msg: props},
		{name: "properties", num: 29, kind: kMessageMap, omitZero: true, value: messageValue(props)},
		{name: "additionalProperties", num: 30, kind: kMessage, pres: pointer, msg: orBool},
		{name: "patternProperties", num: 31, kind: kMessageMap, omitZero: true, value: messageValue(props)},
		{name: "dependencies", num: 32, kind: kMessageMap, omitZero: true, value: messageValue(orStringArray)},
		{name: "additionalItems", num: 33, kind: kMessage, pres: pointer, msg: orBool},
		{name: "definitions", num: 34, kind: kMessageMap, omitZero: true, value: messageValue(props)},
		{name: "externalDocs", num: 35, kind: kMessage, pres: pointer, msg: &message{name: "ExternalDocumentation", fields: []field{
			{name: "description", num: 1, kind: kString, omitZero: true},
			{name: "url", num: 2, kind: kString, omitZero: true},
		}}},
		{name: "example", num: 36, kind: kJSON, pres: pointer},
		{name: "nullable", num: 37, kind: kBool, omitZero: true},
		{name: "x-kubernetes-preserve-unknown-fields", num: 38, kind: kBool, pres: pointer},
		{name: "x-kubernetes-embedded-resource", num: 39, kind: kBool, omitZero: true},
		{name: "x-kubernetes-int-or-string", num: 40, kind: kBool, omitZero: true},
		{name: "x-kubernetes-list-map-keys", num: 41, kind: kString, pres: repeated, omitZero: true},
		{name: "x-kubernetes-list-type", num: 42, kind: kString, pres: pointer},
		{name: "x-kubernetes-map-type", num: 43, kind: kString, pres: pointer},
		{name: "x-kubernetes-validations", num: 44, kind: kMessage, pres: repeated, omitZero: true, msg: &message{name: "ValidationRule", fields: []field{
			{name: "rule", num: 1, kind: kString},
			{name: "message", num: 2, kind: kString, omitZero: true},
			{name: "messageExpression", num: 3, kind: kString, omitZero: true},
			{name: "reason", num: 4, kind: kString, pres: pointer},
			{name: "fieldPath", num: 5, kind: kString, omitZero: true},
			{name: "optionalOldSelf", num: 6, kind: kBool, pres: pointer},
		}}},
	}
	return props
}
