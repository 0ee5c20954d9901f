package crd

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/listwatch/listwatch/api"
)

// rootFields are the internal JSONSchemaProps fields in their order, each
// with its v1 key and whether kube allows it at the root of a schema whose
// version has the status subresource (allowedFieldsAtRootSchema: what
// keeps its meaning when properties.status is served on its own).
var rootFields = []struct {
	name, key string
	allowed   bool
}{
	{"ID", "id", false}, {"Schema", "$schema", false}, {"Ref", "$ref", false},
	{"Description", "description", true}, {"Type", "type", true}, {"Nullable", "nullable", false},
	{"Format", "format", true}, {"Title", "title", true}, {"Default", "default", false},
	{"Maximum", "maximum", true}, {"ExclusiveMaximum", "exclusiveMaximum", true},
	{"Minimum", "minimum", true}, {"ExclusiveMinimum", "exclusiveMinimum", true},
	{"MaxLength", "maxLength", true}, {"MinLength", "minLength", true}, {"Pattern", "pattern", true},
	{"MaxItems", "maxItems", true}, {"MinItems", "minItems", true}, {"UniqueItems", "uniqueItems", true},
	{"MultipleOf", "multipleOf", true}, {"Enum", "enum", false},
	{"MaxProperties", "maxProperties", false}, {"MinProperties", "minProperties", false},
	{"Required", "required", true}, {"Items", "items", true},
	{"AllOf", "allOf", false}, {"OneOf", "oneOf", false}, {"AnyOf", "anyOf", false}, {"Not", "not", false},
	{"Properties", "properties", true}, {"AdditionalProperties", "additionalProperties", false},
	{"PatternProperties", "patternProperties", false}, {"Dependencies", "dependencies", false},
	{"AdditionalItems", "additionalItems", false}, {"Definitions", "definitions", false},
	{"ExternalDocs", "externalDocs", true}, {"Example", "example", true},
	{"XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields", true},
	{"XEmbeddedResource", "x-kubernetes-embedded-resource", false},
	{"XIntOrString", "x-kubernetes-int-or-string", false},
	{"XListMapKeys", "x-kubernetes-list-map-keys", false},
	{"XListType", "x-kubernetes-list-type", false}, {"XMapType", "x-kubernetes-map-type", false},
	{"XValidations", "x-kubernetes-validations", true},
}

// allowedAtStatusRoot is kube's list as its message prints it.
const allowedAtStatusRoot = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]"

// statusRoot is kube's check of the root of a schema served with the
// status subresource: the first field set, in the internal type's order,
// that is not an object type or not allowed there fails, and nothing
// after it is looked at. kube tests for zero values of the internal
// type, so a key given null (or false, or "" for a plain string) is
// unset, while an empty list, map or pointer's value is set.
func (c *checker) statusRoot(raw json.RawMessage, path string) {
	var root map[string]json.RawMessage
	if json.Unmarshal(raw, &root) != nil {
		return
	}
	for _, f := range rootFields {
		v, ok := root[f.key]
		if !ok || isZeroField(f.name, v) {
			continue
		}
		if f.name == "Type" {
			var typ string
			_ = json.Unmarshal(v, &typ)
			if typ != "object" {
				c.add(api.CauseTypeFieldValueInvalid, path+".type", fmt.Sprintf(`Invalid value: %q: only "object" is allowed as the type at the root of the schema if the status subresource is enabled`, typ))
				return
			}
			continue
		}
		if !f.allowed {
			c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %s: only %s fields are allowed at the root of the schema if the status subresource is enabled", internalJSON(raw), allowedAtStatusRoot))
			return
		}
	}
}

// isZeroField reports whether v leaves the internal field name at its zero
// value: null always; false, "" and 0 only for the fields that are plain
// values there (pointers, slices and maps are set by any other value).
func isZeroField(name string, v json.RawMessage) bool {
	s := string(bytes.TrimSpace(v))
	switch name {
	case "ID", "Schema", "Description", "Type", "Format", "Title", "Pattern":
		return s == "null" || s == `""`
	case "Nullable", "ExclusiveMaximum", "ExclusiveMinimum", "UniqueItems", "XEmbeddedResource", "XIntOrString":
		return s == "null" || s == "false"
	}
	return s == "null"
}

// internalJSON writes a v1 schema as encoding/json writes kube's internal
// JSONSchemaProps (Go field names, every field), the form kube's message
// shows; raw itself if it does not decode.
func internalJSON(raw json.RawMessage) string {
	var s kubeSchema
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&s) != nil {
		return string(raw)
	}
	b, err := json.Marshal(&s)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// kubeSchema mirrors apiextensions' internal JSONSchemaProps: the same
// field names, types and order, no tags, so that encoding/json writes it
// as it writes kube's.
type kubeSchema struct {
	ID                     string
	Schema                 string
	Ref                    *string
	Description            string
	Type                   string
	Nullable               bool
	Format                 string
	Title                  string
	Default                *kubeJSON
	Maximum                *float64
	ExclusiveMaximum       bool
	Minimum                *float64
	ExclusiveMinimum       bool
	MaxLength              *int64
	MinLength              *int64
	Pattern                string
	MaxItems               *int64
	MinItems               *int64
	UniqueItems            bool
	MultipleOf             *float64
	Enum                   []kubeJSON
	MaxProperties          *int64
	MinProperties          *int64
	Required               []string
	Items                  *kubeSchemaOrArray
	AllOf                  []kubeSchema
	OneOf                  []kubeSchema
	AnyOf                  []kubeSchema
	Not                    *kubeSchema
	Properties             map[string]kubeSchema
	AdditionalProperties   *kubeSchemaOrBool
	PatternProperties      map[string]kubeSchema
	Dependencies           map[string]kubeSchemaOrStringArray
	AdditionalItems        *kubeSchemaOrBool
	Definitions            map[string]kubeSchema
	ExternalDocs           *struct{ Description, URL string }
	Example                *kubeJSON
	XPreserveUnknownFields *bool
	XEmbeddedResource      bool
	XIntOrString           bool
	XListMapKeys           []string
	XListType              *string
	XMapType               *string
	XValidations           []struct {
		Rule, Message, MessageExpression string
		Reason                           *string
		FieldPath                        string
		OptionalOldSelf                  *bool
	}
}

// UnmarshalJSON reads the v1 form: the keys encoding/json cannot match to
// the Go names are read by their tags.
func (s *kubeSchema) UnmarshalJSON(b []byte) error {
	type plain kubeSchema
	aux := struct {
		*plain
		JSONSchema      string   `json:"$schema"`
		JSONRef         *string  `json:"$ref"`
		Preserve        *bool    `json:"x-kubernetes-preserve-unknown-fields"`
		Embedded        bool     `json:"x-kubernetes-embedded-resource"`
		IntOrString     bool     `json:"x-kubernetes-int-or-string"`
		ListMapKeys     []string `json:"x-kubernetes-list-map-keys"`
		ListType        *string  `json:"x-kubernetes-list-type"`
		MapType         *string  `json:"x-kubernetes-map-type"`
		ValidationRules *[]struct {
			Rule, Message, MessageExpression string
			Reason                           *string
			FieldPath                        string
			OptionalOldSelf                  *bool
		} `json:"x-kubernetes-validations"`
	}{plain: (*plain)(s)}
	if err := decodeNumbers(b, &aux); err != nil {
		return err
	}
	s.Schema, s.Ref, s.XPreserveUnknownFields, s.XEmbeddedResource, s.XIntOrString = aux.JSONSchema, aux.JSONRef, aux.Preserve, aux.Embedded, aux.IntOrString
	s.XListMapKeys, s.XListType, s.XMapType = aux.ListMapKeys, aux.ListType, aux.MapType
	if aux.ValidationRules != nil {
		s.XValidations = *aux.ValidationRules
	}
	return nil
}

// kubeJSON is a JSON value as kube's conversion holds it: numbers that
// are integers as int64, the others as float64 (apimachinery's util/json).
type kubeJSON struct{ v any }

func (j *kubeJSON) UnmarshalJSON(b []byte) error {
	var v any
	if err := decodeNumbers(b, &v); err != nil {
		return err
	}
	j.v = kubeNumbers(v)
	return nil
}

func (j kubeJSON) MarshalJSON() ([]byte, error) { return json.Marshal(j.v) }

func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

type kubeSchemaOrArray struct {
	Schema      *kubeSchema
	JSONSchemas []kubeSchema
}

func (s *kubeSchemaOrArray) UnmarshalJSON(b []byte) error {
	return schemaOrList(b, &s.Schema, &s.JSONSchemas)
}

// schemaOrList decodes b into list if it is a JSON array, else into schema.
func schemaOrList[T any](b []byte, schema **kubeSchema, list *T) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		return json.Unmarshal(b, list)
	}
	return json.Unmarshal(b, schema)
}

type kubeSchemaOrBool struct {
	Allows bool
	Schema *kubeSchema
}

func (s *kubeSchemaOrBool) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &s.Allows); err == nil {
		return nil
	}
	s.Allows = true
	return json.Unmarshal(b, &s.Schema)
}

type kubeSchemaOrStringArray struct {
	Schema   *kubeSchema
	Property []string
}

func (s *kubeSchemaOrStringArray) UnmarshalJSON(b []byte) error {
	return schemaOrList(b, &s.Schema, &s.Property)
}
