package crd

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/listwatch/listwatch/internal/server/resource"
)

// refPrefix is how the built-in schemas name their definitions.
const refPrefix = "#/components/schemas/"

// PruneBuiltins makes every built-in resource but the (recursive)
// CustomResourceDefinition prune unknown fields by its schema, so that
// fieldValidation=Strict and Warn work on built-in kinds as in kube.
func PruneBuiltins(rs []*resource.Resource) error {
	defs := resource.Definitions()
	for _, r := range rs {
		if r.Group == Group || r.Schema == nil {
			continue
		}
		s, err := BuiltinSchema(r.Schema, defs)
		if err != nil {
			return fmt.Errorf("schema of %s: %w", r.Kind, err)
		}
		r.PruneAndDefault = s.PruneAndDefault
	}
	return nil
}

// BuiltinSchema parses a built-in kind's schema (resource.Resource.Schema,
// whose properties refer to resource.Definitions with $ref) into a Schema
// that prunes as kube's typed decoder does: every field the kind does not
// have is dropped. A definition that refers to itself (recursion) cannot be
// inlined and is an error.
func BuiltinSchema(schema map[string]any, defs map[string]map[string]any) (*Schema, error) {
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
func inline(v any, defs map[string]map[string]any, open map[string]bool) (any, error) {
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

func inlineMap(m map[string]any, defs map[string]map[string]any, open map[string]bool) (any, error) {
	if name, ok := refName(m); ok {
		if open[name] {
			return nil, fmt.Errorf("definition %s refers to itself", name)
		}
		def, ok := defs[name]
		if !ok {
			return nil, fmt.Errorf("no definition %s", name)
		}
		open[name] = true
		defer delete(open, name)
		return inline(def, defs, open)
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
