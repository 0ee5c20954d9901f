package crd

import (
	"fmt"
	"math"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// Resources returns the resources a CustomResourceDefinition defines: one
// per served version. Every one but the storage version's points at it in
// Storage, so objects are stored once whatever version they are written in.
func Resources(obj api.Object) ([]*resource.Resource, error) {
	d, err := decode(obj)
	if err != nil {
		return nil, err
	}
	sv := d.storageVersion()
	if sv == nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s has no storage version", obj.Name())
	}
	stored, err := d.resource(sv)
	if err != nil {
		return nil, err
	}
	var out []*resource.Resource
	for i := range d.Spec.Versions {
		v := &d.Spec.Versions[i]
		if !v.Served {
			continue
		}
		if v == sv {
			out = append(out, stored)
			continue
		}
		r, err := d.resource(v)
		if err != nil {
			return nil, err
		}
		r.Storage = stored
		out = append(out, r)
	}
	return out, nil
}

// resource is one version of the definition as a served resource.
func (d *definition) resource(v *version) (*resource.Resource, error) {
	n := d.Spec.Names
	r := &resource.Resource{
		Group: d.Spec.Group, Version: v.Name, Plural: n.Plural, Singular: n.Singular,
		Kind: n.Kind, ListKind: n.ListKind, ShortNames: n.ShortNames, Categories: n.Categories,
		Namespaced: d.Spec.Scope == "Namespaced", StatusSubresource: v.hasStatus(), Generation: true,
		FieldPaths: v.fieldPaths(),
	}
	cols, err := columns(v.AdditionalPrinterColumns)
	if err != nil {
		return nil, fmt.Errorf("version %s: %w", v.Name, err)
	}
	r.Columns = cols
	if raw := v.rawSchema(); raw != nil {
		s, err := ParseSchema(raw)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		r.PruneAndDefault = s.PruneAndDefault
		r.Validate, r.ValidateUpdate = s.validator()
		if r.Schema, err = api.ParseObject(raw); err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
	}
	if r.Scale = v.scalePaths(); r.Scale != nil {
		r.Subresources = append(r.Subresources, resource.ScaleSubresource)
		r.Validate = scaleChecks(r.Validate, r.Scale)
	}
	return r, nil
}

// defaultColumns are a custom resource's columns when its version lists
// none: its age, as kube's default table convertor for custom resources.
var defaultColumns = []printerColumn{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}}

// columns turns additionalPrinterColumns into Table columns.
func columns(pcs []printerColumn) ([]resource.Column, error) {
	if len(pcs) == 0 {
		pcs = defaultColumns
	}
	out := make([]resource.Column, 0, len(pcs))
	for _, pc := range pcs {
		path, err := ParsePath(pc.JSONPath)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", pc.Name, err)
		}
		desc := pc.Description
		if desc == "" {
			desc = "Custom resource definition column (in JSONPath format): " + pc.JSONPath
		}
		out = append(out, resource.Column{
			TableColumnDefinition: api.TableColumnDefinition{Name: pc.Name, Type: pc.Type, Format: pc.Format, Description: desc, Priority: pc.Priority},
			Cell:                  cell(pc.Type, path),
		})
	}
	return out, nil
}

// cell reads a column's value as kube's table convertor does: the first
// value found, as the column's type, or nil (an empty cell) when absent or
// of another type. Dates are the raw timestamp; kubectl shows their age.
func cell(typ string, path Path) func(api.Object) any {
	return func(o api.Object) any {
		v, ok := path.Eval(map[string]any(o))
		if !ok {
			return nil
		}
		switch typ {
		case "string":
			return text(v)
		case "integer":
			if typeOf(v) == "integer" {
				f, _ := toFloat(v)
				return int64(f)
			}
		case "number":
			if f, ok := toFloat(v); ok && !math.IsInf(f, 0) {
				return f
			}
		case "boolean":
			if b, ok := v.(bool); ok {
				return b
			}
		case "date":
			if s, ok := v.(string); ok {
				return s
			}
		}
		return nil
	}
}

// text prints a value as JSONPath printing does: strings as they are,
// everything else as JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return show(v)
}

// ObjectsOf returns a resource whose keys are those of every object of the
// definition, in every version and namespace, for deleting them all.
func ObjectsOf(obj api.Object) (*resource.Resource, error) {
	d, err := decode(obj)
	if err != nil {
		return nil, err
	}
	if d.Spec.Group == "" || d.Spec.Names.Plural == "" {
		return nil, fmt.Errorf("CustomResourceDefinition %s names no group and plural", obj.Name())
	}
	return &resource.Resource{Group: d.Spec.Group, Plural: d.Spec.Names.Plural}, nil
}
