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
// or a built-in kind's published definition, in which what the schema
// leaves untyped (int-or-string and quantity fields, raw extensions) is
// dynamic, so that no expression is reported wrongly over it. nil when r
// has none.
func TypeSchema(r *resource.Resource) (*Schema, error) {
	switch {
	case r.Schema != nil:
		raw, err := json.Marshal(r.Schema)
		if err != nil {
			return nil, err
		}
		return ParseSchema(raw)
	case r.Definition != "" && r.Group != Group: // CustomResourceDefinition's is recursive
		s, err := BuiltinSchema(kubespec.Schema(r.Definition), kubespec.Schema)
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

// ResourceType declares the objects of schema s as CEL object types, as
// kube's type checking of admission policies declares a resource
// (SchemaDeclType of a resource root): it returns the root's type and the
// option that declares the types, over base's. The root's apiVersion and
// kind are strings; its metadata is dynamic, where kube types it by
// ObjectMeta's published schema, so that no expression reading metadata
// is reported wrongly.
func ResourceType(base *cel.Env, s *Schema, name string) (*cel.Type, cel.EnvOption) {
	root := *s
	root.Properties = make(map[string]*Schema, len(s.Properties)+3)
	maps.Copy(root.Properties, s.Properties)
	root.Properties["apiVersion"] = &Schema{Type: "string"}
	root.Properties["kind"] = &Schema{Type: "string"}
	root.Properties["metadata"] = &Schema{IntOrString: true} // dynamic: see above
	p := &objectTypes{Provider: base.CELTypeProvider(), objects: map[string]*Schema{}}
	return p.typeOf(&root, name), cel.CustomTypeProvider(p)
}
