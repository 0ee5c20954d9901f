package policies

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// The types mutating policies construct, as kube's DynamicTypeResolver
// (k8s.io/apiserver/pkg/cel/mutation): Object and Object.<path> for an
// apply configuration, every field dynamic; JSONPatch{op, path, from,
// value} for one operation of a JSON patch.
const (
	objectTypeName    = "Object"
	jsonPatchTypeName = "JSONPatch"
)

var (
	objectType    = types.NewObjectType(objectTypeName)
	jsonPatchType = types.NewObjectType(jsonPatchTypeName)
)

// patchTypes declares the patch types in an environment, over the types it
// already has.
func patchTypes() cel.EnvOption {
	return func(e *cel.Env) (*cel.Env, error) {
		return cel.CustomTypeProvider(&patchTypeProvider{e.CELTypeProvider()})(e)
	}
}

type patchTypeProvider struct{ types.Provider }

// isObjectType says whether name is Object or one of its field types.
func isObjectType(name string) bool {
	return name == objectTypeName || strings.HasPrefix(name, objectTypeName+".")
}

func (p *patchTypeProvider) FindStructType(name string) (*types.Type, bool) {
	switch {
	case name == jsonPatchTypeName:
		return types.NewTypeTypeWithParam(jsonPatchType), true
	case isObjectType(name):
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p *patchTypeProvider) FindStructFieldNames(name string) ([]string, bool) {
	switch {
	case name == jsonPatchTypeName:
		return []string{"op", "from", "path", "value"}, true
	case isObjectType(name):
		return nil, true // any field
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p *patchTypeProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	switch {
	case name == jsonPatchTypeName:
		switch field {
		case "op", "from", "path":
			return &types.FieldType{Type: types.StringType}, true
		}
		return &types.FieldType{Type: types.DynType}, true
	case isObjectType(name):
		return &types.FieldType{Type: types.DynType}, true
	}
	return p.Provider.FindStructFieldType(name, field)
}

func (p *patchTypeProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	switch {
	case name == jsonPatchTypeName:
		return newJSONPatchOp(fields)
	case isObjectType(name):
		return &objectVal{typeName: name, fields: fields}
	}
	return p.Provider.NewValue(name, fields)
}

// objectVal is an Object (or Object.<path>) value of an apply
// configuration.
type objectVal struct {
	typeName string
	fields   map[string]ref.Val
}

func (v *objectVal) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("unable to convert %s to %v", v.typeName, t)
}

func (v *objectVal) ConvertToType(t ref.Type) ref.Val {
	switch {
	case t.TypeName() == v.typeName:
		return v
	case t == types.TypeType:
		return types.NewTypeTypeWithParam(types.NewObjectType(v.typeName))
	}
	return types.NewErr("unsupported conversion into %v", t)
}

func (v *objectVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(*objectVal)
	return types.Bool(ok && o.typeName == v.typeName && reflect.DeepEqual(o.fields, v.fields))
}

func (v *objectVal) Type() ref.Type { return types.NewObjectType(v.typeName) }
func (v *objectVal) Value() any     { return v.fields }

// checkTypeNames is kube's CheckTypeNamesMatchFieldPathNames: every Object
// value's type names its path from the root (Object.spec.template for the
// value of spec.template).
func checkTypeNames(v ref.Val, path string) []error {
	var errs []error
	switch v := v.(type) {
	case *objectVal:
		if v.typeName != path {
			errs = append(errs, fmt.Errorf("unexpected type name %q, expected %q, which matches field name path from root Object type", v.typeName, path))
		}
		for k, f := range v.fields {
			errs = append(errs, checkTypeNames(f, path+"."+k)...)
		}
	case traits.Lister:
		for it := v.Iterator(); it.HasNext() == types.True; {
			errs = append(errs, checkTypeNames(it.Next(), path)...)
		}
	case traits.Mapper:
		for it := v.Iterator(); it.HasNext() == types.True; {
			errs = append(errs, checkTypeNames(v.Get(it.Next()), path)...)
		}
	}
	return errs
}

// native is a CEL value as JSON's Go values: Objects and maps become
// map[string]any, lists []any, null nil.
func native(v ref.Val) (any, error) {
	switch v := v.(type) {
	case *objectVal:
		out := make(map[string]any, len(v.fields))
		for k, f := range v.fields {
			n, err := native(f)
			if err != nil {
				return nil, fmt.Errorf("fail to convert field %q: %w", k, err)
			}
			out[k] = n
		}
		return out, nil
	case types.Null:
		return nil, nil
	case traits.Mapper:
		out := map[string]any{}
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			key, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %q is of type %v, not string", k, k.Type())
			}
			n, err := native(v.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(key)] = n
		}
		return out, nil
	case traits.Lister:
		out := []any{}
		for it := v.Iterator(); it.HasNext() == types.True; {
			n, err := native(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
		return out, nil
	case *types.Err:
		return nil, v
	}
	return v.Value(), nil
}

// jsonPatchOp is a JSONPatch value: one operation.
type jsonPatchOp struct {
	op, path, from string
	value          ref.Val // nil when not set
}

func newJSONPatchOp(fields map[string]ref.Val) ref.Val {
	p := &jsonPatchOp{}
	for name, v := range fields {
		if name == "value" {
			p.value = v
			continue
		}
		s, ok := v.Value().(string)
		if !ok {
			return types.NewErr("unexpected type %T for JSONPatchType '%s' field", v.Value(), name)
		}
		switch name {
		case "op":
			p.op = s
		case "path":
			p.path = s
		case "from":
			p.from = s
		default:
			return types.NewErr("unexpected JSONPatchType field: %s", name)
		}
	}
	return p
}

func (p *jsonPatchOp) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("cannot convert to native type: %v", t)
}

func (p *jsonPatchOp) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case jsonPatchType:
		return p
	case types.TypeType:
		return types.NewTypeTypeWithParam(jsonPatchType)
	}
	return types.NewErr("unsupported type: %s", t.TypeName())
}

func (p *jsonPatchOp) Equal(other ref.Val) ref.Val {
	o, ok := other.(*jsonPatchOp)
	if !ok || p.op != o.op || p.path != o.path || p.from != o.from || (p.value == nil) != (o.value == nil) {
		return types.False
	}
	if p.value == nil {
		return types.True
	}
	return p.value.Equal(o.value)
}

func (p *jsonPatchOp) Type() ref.Type { return jsonPatchType }
func (p *jsonPatchOp) Value() any     { return p }

// operation is the JSON of the operation.
func (p *jsonPatchOp) operation() (map[string]any, error) {
	op := map[string]any{"op": p.op, "path": p.path}
	if p.from != "" {
		op["from"] = p.from
	}
	if p.value != nil {
		if o, ok := p.value.(*objectVal); ok {
			if errs := checkTypeNames(o, o.typeName); len(errs) > 0 {
				return nil, fmt.Errorf("type mismatch: %w", errors.Join(errs...))
			}
		}
		v, err := native(p.value)
		if err != nil {
			return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
		}
		op["value"] = v
	}
	return op, nil
}
