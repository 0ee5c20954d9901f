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
			s, err := BuiltinSchema(kubespec.Schema(r.Definition), kubespec.Schema)
			if err != nil { // kube's published schemas all inline: the tests build each
				panic(fmt.Sprintf("schema of %s: %v", r.Kind, err))
			}
			return s
		})
		quantities := sync.OnceValue(func() *quantityPlaces {
			return quantitiesIn(kubespec.Schema(r.Definition), kubespec.Schema, map[string]bool{})
		})
		goDefaults := defaulting.For(r.Group, r.Version, r.Kind)
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
// into a Schema
// that prunes as kube's typed decoder does: every field the kind does not
// have is dropped. A definition that refers to itself (recursion) cannot be
// inlined and is an error.
func BuiltinSchema(schema map[string]any, defs func(name string) map[string]any) (*Schema, error) {
	inlined, err := inline(schema, defs, map[string]bool{})
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(inlined)
	if err != nil {
		return nil, fmt.Errorf("encoding the inlined schema: %w", err)
	}
	return ParseSchema(raw)
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
