package openapi

import (
	"maps"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/internal/server/resource"
)

// refPrefix is how the v3 schemas reference each other.
const refPrefix = "#/components/schemas/"

// schemaSet collects the definitions one document needs.
type schemaSet struct {
	known map[string]map[string]any // every shared definition, by name
	out   map[string]any            // the document's definitions
}

func newSchemaSet() *schemaSet {
	return &schemaSet{known: resource.Definitions(), out: map[string]any{}}
}

// addResource adds the resource's kind and list kind, and every definition
// they reference.
func (s *schemaSet) addResource(r *resource.Resource) {
	if r.Definition != "" {
		s.addKnown(r.Definition)
	} else {
		s.add(defName(r), kindSchema(r))
	}
	if r.CreateOnly {
		return
	}
	if _, ok := s.known[listName(r)]; ok && r.Definition != "" {
		s.addKnown(listName(r))
	} else {
		s.add(listName(r), listSchema(r))
	}
	for _, name := range []string{resource.StatusName, resource.PatchName, resource.DeleteOptsName} {
		s.addKnown(name)
	}
	if r.Scale != nil {
		s.addKnown(resource.ScaleName)
	}
}

func (s *schemaSet) add(name string, schema map[string]any) {
	if _, done := s.out[name]; done {
		return
	}
	s.out[name] = schema
	for _, ref := range refs(schema) {
		s.addKnown(ref)
	}
}

func (s *schemaSet) addKnown(name string) {
	if def, ok := s.known[name]; ok {
		s.add(name, def)
	}
}

// refs returns the definition names a schema references, sorted.
func refs(v any) []string {
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok && strings.HasPrefix(r, refPrefix) {
				seen[strings.TrimPrefix(r, refPrefix)] = true
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return slices.Sorted(maps.Keys(seen))
}

// kindSchema is the published schema of a custom resource's kind: its
// Schema (or, when it has none, any object), with apiVersion, kind and metadata as kube
// publishes them for every kind, and the group-version-kind extension that
// kubectl looks kinds up by.
func kindSchema(r *resource.Resource) map[string]any {
	s := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	if r.Schema != nil {
		s = deepCopy(r.Schema).(map[string]any)
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	if _, ok := props["apiVersion"]; !ok {
		props["apiVersion"] = map[string]any{"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}
	}
	if _, ok := props["kind"]; !ok {
		props["kind"] = map[string]any{"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}
	}
	props["metadata"] = map[string]any{
		"description": "Standard object's metadata.",
		"allOf":       []any{map[string]any{"$ref": refPrefix + resource.ObjectMetaName}},
	}
	s["properties"] = props
	s["type"] = "object"
	s["x-kubernetes-group-version-kind"] = gvkExtension(r.Group, r.Version, r.Kind)
	return s
}

// listSchema is the schema of a custom resource's list kind.
func listSchema(r *resource.Resource) map[string]any {
	return map[string]any{
		"description": r.ListKind + " is a list of " + r.Kind + ".",
		"type":        "object",
		"required":    []any{"items"},
		"properties": map[string]any{
			"apiVersion": map[string]any{"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
			"kind":       map[string]any{"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
			"items":      map[string]any{"type": "array", "description": "List of " + r.Plural + ".", "items": map[string]any{"$ref": refPrefix + defName(r)}},
			"metadata":   map[string]any{"description": "Standard list metadata.", "allOf": []any{map[string]any{"$ref": refPrefix + resource.ListMetaName}}},
		},
		"x-kubernetes-group-version-kind": gvkExtension(r.Group, r.Version, r.ListKind),
	}
}

func gvkExtension(group, version, kind string) []any {
	return []any{map[string]any{"group": group, "version": version, "kind": kind}}
}

// deepCopy copies a JSON value, so documents never share maps with the
// catalogue.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}
