package crd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
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
// JSONSchemaProps (Go field names in the struct's order, every field,
// numbers as kube's conversion holds them), the form kube's message
// shows; it stops once it has written enough for the cause the server
// keeps (apierror.MaxCauseRunes runes), so that a large or deep schema
// costs one decoding.
func internalJSON(raw json.RawMessage) string {
	var v any
	if decodeNumbers(raw, &v) != nil {
		return apierror.Truncate(string(raw), apierror.MaxCauseRunes)
	}
	w := internalWriter{limit: utf8.UTFMax * apierror.MaxCauseRunes}
	w.schema(v)
	return w.String()
}

func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// internalWriter writes schemas in the internal form, up to limit bytes
// (a value it has begun it writes whole).
type internalWriter struct {
	strings.Builder
	limit int
}

// schema writes one schema: the internal type's fields from the v1 keys.
func (w *internalWriter) schema(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		w.json(v)
		return
	}
	sep := "{"
	for _, f := range []struct {
		name  string
		write func(any)
	}{
		{"ID", w.str}, {"Schema", w.str}, {"Ref", w.json}, {"Description", w.str}, {"Type", w.str},
		{"Nullable", w.boolean}, {"Format", w.str}, {"Title", w.str}, {"Default", w.json},
		{"Maximum", w.float}, {"ExclusiveMaximum", w.boolean}, {"Minimum", w.float}, {"ExclusiveMinimum", w.boolean},
		{"MaxLength", w.json}, {"MinLength", w.json}, {"Pattern", w.str}, {"MaxItems", w.json}, {"MinItems", w.json},
		{"UniqueItems", w.boolean}, {"MultipleOf", w.float}, {"Enum", w.json},
		{"MaxProperties", w.json}, {"MinProperties", w.json}, {"Required", w.json}, {"Items", w.items},
		{"AllOf", w.list}, {"OneOf", w.list}, {"AnyOf", w.list}, {"Not", w.optional},
		{"Properties", w.schemas}, {"AdditionalProperties", w.orBool}, {"PatternProperties", w.schemas},
		{"Dependencies", w.dependencies}, {"AdditionalItems", w.orBool}, {"Definitions", w.schemas},
		{"ExternalDocs", w.docs}, {"Example", w.json}, {"XPreserveUnknownFields", w.json},
		{"XEmbeddedResource", w.boolean}, {"XIntOrString", w.boolean}, {"XListMapKeys", w.json},
		{"XListType", w.json}, {"XMapType", w.json}, {"XValidations", w.rules},
	} {
		if w.Len() >= w.limit {
			return
		}
		w.WriteString(sep + `"` + f.name + `":`)
		sep = ","
		f.write(m[v1Key(f.name)])
	}
	w.WriteString("}")
}

// v1Key is the v1 key of an internal field.
func v1Key(name string) string {
	for _, f := range rootFields {
		if f.name == name {
			return f.key
		}
	}
	return ""
}

// json writes a pointer, slice or JSON field: null when absent.
func (w *internalWriter) json(v any) {
	b, err := json.Marshal(kubeNumbers(v))
	if err != nil {
		b = []byte("null") // a number past float64, which kube's decoding refuses first
	}
	w.Write(b)
}

// str writes a string field: "" when absent.
func (w *internalWriter) str(v any) {
	s, _ := v.(string)
	w.json(s)
}

func (w *internalWriter) boolean(v any) { w.json(v == true) }

// float writes a *float64 field.
func (w *internalWriter) float(v any) {
	if n, ok := v.(json.Number); ok {
		f, _ := n.Float64()
		w.json(f)
		return
	}
	w.json(v)
}

func (w *internalWriter) optional(v any) {
	if v == nil {
		w.WriteString("null")
		return
	}
	w.schema(v)
}

func (w *internalWriter) list(v any) { w.elements(v, w.schema) }

// schemas writes a map of schemas.
func (w *internalWriter) schemas(v any) { w.entries(v, w.schema) }

// elements writes a JSON array of v's elements, each by write (v not an
// array as it is).
func (w *internalWriter) elements(v any, write func(any)) {
	l, ok := v.([]any)
	if !ok {
		w.json(v)
		return
	}
	w.WriteString("[")
	for i, x := range l {
		if w.Len() >= w.limit {
			return
		}
		if i > 0 {
			w.WriteString(",")
		}
		write(x)
	}
	w.WriteString("]")
}

// entries writes a JSON object of v's entries in order of keys, each
// value by write (v not an object as it is).
func (w *internalWriter) entries(v any, write func(any)) {
	m, ok := v.(map[string]any)
	if !ok {
		w.json(v)
		return
	}
	w.WriteString("{")
	for i, k := range sortedKeys(m) {
		if w.Len() >= w.limit {
			return
		}
		if i > 0 {
			w.WriteString(",")
		}
		w.json(k)
		w.WriteString(":")
		write(m[k])
	}
	w.WriteString("}")
}

// items writes a JSONSchemaPropsOrArray.
func (w *internalWriter) items(v any) {
	switch v.(type) {
	case nil:
		w.WriteString("null")
	case []any:
		w.WriteString(`{"Schema":null,"JSONSchemas":`)
		w.list(v)
		w.WriteString("}")
	default:
		w.WriteString(`{"Schema":`)
		w.schema(v)
		w.WriteString(`,"JSONSchemas":null}`)
	}
}

// orBool writes a JSONSchemaPropsOrBool.
func (w *internalWriter) orBool(v any) {
	switch v := v.(type) {
	case nil:
		w.WriteString("null")
	case bool:
		w.WriteString(`{"Allows":` + strconv.FormatBool(v) + `,"Schema":null}`)
	default:
		w.WriteString(`{"Allows":true,"Schema":`)
		w.schema(v)
		w.WriteString("}")
	}
}

// dependencies writes JSONSchemaDependencies: a schema or property names
// for each key.
func (w *internalWriter) dependencies(v any) {
	w.entries(v, func(d any) {
		if l, ok := d.([]any); ok {
			w.WriteString(`{"Schema":null,"Property":`)
			w.json(l)
		} else {
			w.WriteString(`{"Schema":`)
			w.optional(d)
			w.WriteString(`,"Property":null`)
		}
		w.WriteString("}")
	})
}

func (w *internalWriter) docs(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		w.json(v)
		return
	}
	w.WriteString(`{"Description":`)
	w.str(m["description"])
	w.WriteString(`,"URL":`)
	w.str(m["url"])
	w.WriteString("}")
}

// rules writes ValidationRules.
func (w *internalWriter) rules(v any) {
	w.elements(v, func(x any) {
		r, _ := x.(map[string]any)
		sep := "{"
		for _, f := range []struct {
			name, key string
			write     func(any)
		}{{"Rule", "rule", w.str}, {"Message", "message", w.str}, {"MessageExpression", "messageExpression", w.str},
			{"Reason", "reason", w.json}, {"FieldPath", "fieldPath", w.str}, {"OptionalOldSelf", "optionalOldSelf", w.json}} {
			w.WriteString(sep + `"` + f.name + `":`)
			sep = ","
			f.write(r[f.key])
		}
		w.WriteString("}")
	})
}
