package crd

import (
	"encoding/json"
	"maps"

	"github.com/google/cel-go/cel"
)

// ResourceType declares the objects of a custom resource's schema (a
// version's openAPIV3Schema, as resource.Resource.Schema holds it) as CEL
// object types, as kube's type checking of admission policies declares a
// resource (SchemaDeclType of a resource root): it returns the root's type
// and the option that declares the types, over base's. The root's
// apiVersion and kind are strings; its metadata is dynamic, where kube
// types it by ObjectMeta's published schema (which is not derived here),
// so that no expression reading metadata is reported wrongly.
func ResourceType(base *cel.Env, schema map[string]any, name string) (*cel.Type, cel.EnvOption, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, err
	}
	s, err := ParseSchema(raw)
	if err != nil {
		return nil, nil, err
	}
	root := *s
	root.Properties = make(map[string]*Schema, len(s.Properties)+3)
	maps.Copy(root.Properties, s.Properties)
	root.Properties["apiVersion"] = &Schema{Type: "string"}
	root.Properties["kind"] = &Schema{Type: "string"}
	root.Properties["metadata"] = &Schema{IntOrString: true} // dynamic: see above
	p := &objectTypes{Provider: base.CELTypeProvider(), objects: map[string]*Schema{}}
	return p.typeOf(&root, name), cel.CustomTypeProvider(p), nil
}
