package crd

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/server/defaulting"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// refPrefix is how the built-in schemas name their definitions.
const refPrefix = "#/components/schemas/"

// PruneBuiltins makes every built-in resource but the (recursive)
// CustomResourceDefinition prune unknown fields by its schema and apply its
// defaults (Go's zero values, as kube's typed decoder gives them), then
// kube's Go defaulting of the kind, and write its quantities as kube's
// Quantity encodes them, so that fieldValidation=Strict and Warn work on
// built-in kinds and objects are stored as in kube. A kind's schema is built on its first write: most of the
// seventy are never written, and inlining Pod's takes milliseconds.
func PruneBuiltins(rs []*resource.Resource) {
	for _, r := range rs {
		if r.Group == Group || r.Definition == "" {
			continue
		}
		schema := sync.OnceValue(func() *Schema {
			s, err := BuiltinSchema(r.Definition, kubespec.Schema)
			if err != nil { // kube's published schemas all inline: the tests build each
				panic(fmt.Sprintf("schema of %s: %v", r.Kind, err))
			}
			return s
		})
		quantities := sync.OnceValue(func() *quantityPlaces {
			return quantitiesIn(kubespec.Schema(r.Definition), kubespec.Schema, map[string]bool{})
		})
		goDefaults := defaulting.For(r.Group, r.Version, r.Kind)
		r.OmitEmpty = func(obj api.Object) { schema().omitEmptyIn(map[string]any(obj)) }
		r.PruneAndDefault = func(obj api.Object) []string {
			unknown := schema().PruneAndDefault(obj)
			if goDefaults != nil {
				goDefaults(obj)
			}
			if q := quantities(); q != nil {
				q.canonicalize(map[string]any(obj))
			}
			return unknown
		}
	}
}

// BuiltinSchema parses a built-in kind's schema (kube's published
// definition, whose properties refer to others, found by defs, with $ref)
// into a Schema that prunes as kube's typed decoding and encoding do:
// every field the kind does not have is dropped, and so is every empty
// one its Go type omits (omitempty). A definition that refers to itself (recursion) cannot be
// inlined and is an error.
func BuiltinSchema(definition string, defs func(name string) map[string]any) (*Schema, error) {
	inlined, err := inline(map[string]any{"$ref": refPrefix + definition}, defs, map[string]bool{})
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(inlined)
	if err != nil {
		return nil, fmt.Errorf("encoding the inlined schema: %w", err)
	}
	s, err := ParseSchema(raw)
	if err != nil {
		return nil, err
	}
	markOmitEmpty(s, inlined)
	return s, nil
}

// omitEmptyKey marks, in an inlined schema, a property whose Go field
// kube's encoding omits when empty (kubespec.OmitEmpty).
const omitEmptyKey = "x-listwatch-omit-empty"

// markOmitEmpty sets omitEmpty on the nodes of s whose inlined schema v
// carries omitEmptyKey, and holdsOmitEmpty on them and those above them;
// it says whether s holds any.
func markOmitEmpty(s *Schema, v any) bool {
	m, _ := v.(map[string]any)
	if s == nil || m == nil {
		return false
	}
	s.omitEmpty = m[omitEmptyKey] == true
	s.holdsOmitEmpty = s.omitEmpty
	props, _ := m["properties"].(map[string]any)
	for k, p := range s.Properties {
		s.holdsOmitEmpty = markOmitEmpty(p, props[k]) || s.holdsOmitEmpty
	}
	s.holdsOmitEmpty = markOmitEmpty(s.Items, m["items"]) || s.holdsOmitEmpty
	if s.AdditionalProperties != nil {
		s.holdsOmitEmpty = markOmitEmpty(s.AdditionalProperties.Schema, m["additionalProperties"]) || s.holdsOmitEmpty
	}
	return s.holdsOmitEmpty
}

// omitEmpty drops from v, in place, the empty fields kube's typed
// encoding of a built-in kind leaves out (omitEmpty), as it stores and
// answers the object it validated: its validation sees them ("rules: []"
// is invalid as [], not as null).
func (s *Schema) omitEmptyIn(v any) {
	if s == nil || !s.holdsOmitEmpty {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			prop := s.Properties[k]
			if prop == nil && s.AdditionalProperties != nil {
				prop = s.AdditionalProperties.Schema
			}
			prop.omitEmptyIn(x)
			if prop != nil && prop.omitEmpty && isEmpty(x, prop.Type) {
				delete(v, k)
			}
		}
	case []any:
		for _, x := range v {
			s.Items.omitEmptyIn(x)
		}
	}
}

// isEmpty says whether v, of the schema's type typ, is what
// encoding/json's omitempty leaves out: an empty string, list or map,
// false, or a zero number. A value of another type is never empty: the
// schema's type check refuses it.
func isEmpty(v any, typ string) bool {
	switch v := v.(type) {
	case string:
		return v == "" && typ == "string"
	case bool:
		return !v && typ == "boolean"
	case []any:
		return len(v) == 0 && typ == "array"
	case map[string]any:
		return len(v) == 0 && typ == "object"
	}
	if typ != "integer" && typ != "number" {
		return false
	}
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	case float64:
		return v == 0
	case int64:
		return v == 0
	case int:
		return v == 0
	}
	return false
}

// inline returns v with every $ref (and kube's allOf-of-one-$ref) replaced
// by the definition it names. open holds the definitions being inlined.
func inline(v any, defs func(string) map[string]any, open map[string]bool) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		return inlineMap(v, defs, open)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			var err error
			if out[i], err = inline(e, defs, open); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

func inlineMap(m map[string]any, defs func(string) map[string]any, open map[string]bool) (any, error) {
	if name, ok := refName(m); ok {
		if open[name] {
			return nil, fmt.Errorf("definition %s refers to itself", name)
		}
		def := defs(name)
		if def == nil {
			return nil, fmt.Errorf("no definition %s", name)
		}
		open[name] = true
		defer delete(open, name)
		v, err := inline(def, defs, open)
		if err != nil {
			return nil, err
		}
		// The reference's siblings (its default, description) are the
		// field's: {"allOf": [ref], "default": {}} defaults the field.
		out := v.(map[string]any)
		props, _ := out["properties"].(map[string]any)
		for f := range kubespec.OmitEmpty(name) {
			if p, ok := props[f].(map[string]any); ok {
				p[omitEmptyKey] = true
			}
		}
		for k, e := range m {
			if k != "allOf" && k != "$ref" {
				out[k] = e
			}
		}
		return out, nil
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		var err error
		if out[k], err = inline(e, defs, open); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// refName returns the definition a schema node stands for: {"$ref": ...}
// or {"allOf": [{"$ref": ...}], ...descriptions}.
func refName(m map[string]any) (string, bool) {
	if r, ok := m["$ref"].(string); ok {
		return strings.TrimPrefix(r, refPrefix), true
	}
	if all, ok := m["allOf"].([]any); ok && len(all) == 1 {
		if one, ok := all[0].(map[string]any); ok {
			return refName(one)
		}
	}
	return "", false
}
