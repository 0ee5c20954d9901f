package crd

import (
	"encoding/json"
	"maps"

	"github.com/google/cel-go/cel"

	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// TypeSchema is the schema of r's objects that the type checking of
// admission policies reads: a custom resource version's openAPIV3Schema,
// with kube's string apiVersion and kind, its metadata dynamic (kube types it by ObjectMeta's published schema,
// merged into the resource's, which is not done here); or a built-in
// kind's published definition, ObjectMeta included, in which what the
// schema leaves untyped (int-or-string and quantity fields, raw
// extensions) is dynamic. Either way no expression is reported wrongly.
// nil when r has none.
func TypeSchema(r *resource.Resource) (*Schema, error) {
	switch {
	case r.Schema != nil:
		raw, err := json.Marshal(r.Schema)
		if err != nil {
			return nil, err
		}
		s, err := ParseSchema(raw)
		if err != nil {
			return nil, err
		}
		root := *s
		root.Properties = maps.Clone(s.Properties)
		if root.Properties == nil {
			root.Properties = map[string]*Schema{}
		}
		root.Properties["apiVersion"] = &Schema{Type: "string"}
		root.Properties["kind"] = &Schema{Type: "string"}
		root.Properties["metadata"] = &Schema{IntOrString: true} // dynamic: see above
		return &root, nil
	case r.Definition != "" && r.Group != Group: // CustomResourceDefinition's is recursive
		s, err := BuiltinSchema(r.Definition, kubespec.Schema)
		if err != nil {
			return nil, err
		}
		loosen(s)
		return s, nil
	}
	return nil, nil
}

// loosen makes dynamic what a built-in schema leaves untyped: a field
// without a type (oneOf) and an object without properties.
func loosen(s *Schema) {
	switch {
	case s.Type == "" || s.Type == "object" && len(s.Properties) == 0 && (s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil):
		s.IntOrString = true
	case s.Items != nil:
		loosen(s.Items)
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		loosen(s.AdditionalProperties.Schema)
	}
	for _, p := range s.Properties {
		loosen(p)
	}
}

// ResourceType declares the objects of schema s (TypeSchema's) as CEL
// object types, as kube's type checking of admission policies declares a
// resource (SchemaDeclType of a resource root): it returns the root's type
// and the option that declares the types, over base's.
func ResourceType(base *cel.Env, s *Schema, name string) (*cel.Type, cel.EnvOption) {
	p := &objectTypes{Provider: base.CELTypeProvider(), objects: map[string]*Schema{}}
	return p.typeOf(s, name), cel.CustomTypeProvider(p)
}
