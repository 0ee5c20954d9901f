package crd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/server/webhookclient"
)

// Resources returns the resources a CustomResourceDefinition defines: one
// per served version. Every one but the storage version's points at it in
// Storage, so objects are stored once whatever version they are written in.
func Resources(obj api.Object) ([]*resource.Resource, error) {
	rs, _, err := resources(obj, nil, nil)
	return rs, err
}

// resources is Resources, observer told of conversion webhook calls, r
// resolving the webhook's service reference; it
// also returns the definition's conversion webhook, if any, for its owner
// to close once the resources are replaced.
func resources(obj api.Object, observer ConversionObserver, r webhookclient.Resolver) ([]*resource.Resource, *webhookConverter, error) {
	d, err := decode(obj)
	if err != nil {
		return nil, nil, err
	}
	sv := d.storageVersion()
	if sv == nil {
		return nil, nil, fmt.Errorf("CustomResourceDefinition %s has no storage version", obj.Name())
	}
	stored, err := d.resource(sv)
	if err != nil {
		return nil, nil, err
	}
	var conv *webhookConverter
	if c := d.Spec.Conversion; c != nil && c.Strategy == "Webhook" {
		conv = newWebhookConverter(d, c, observer, r)
	}
	// Every served version names the stored one's hash, as kube's.
	hash := resource.StorageVersionHash(d.Spec.Group, sv.Name, d.Spec.Names.Kind)
	stored.StorageVersionHash = hash
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
			return nil, nil, err
		}
		r.Storage, r.StorageVersionHash = stored, hash
		if conv != nil {
			convertThrough(conv, r, stored)
		}
		out = append(out, r)
	}
	return out, conv, nil
}

// resource is one version of the definition as a served resource.
func (d *definition) resource(v *version) (*resource.Resource, error) {
	n := d.Spec.Names
	r := &resource.Resource{
		Group: d.Spec.Group, Version: v.Name, Plural: n.Plural, Singular: n.Singular,
		Kind: n.Kind, ListKind: n.ListKind, ShortNames: n.ShortNames, Categories: n.Categories,
		Namespaced: d.Spec.Scope == "Namespaced", StatusSubresource: v.hasStatus(), Generation: true,
		FieldPaths: v.fieldPaths(),
		// kube checks custom resource names with apimachinery's
		// NameIsDNSSubdomain, whose messages carry the regex.
		NameRule: resource.DNS1123Subdomain,
	}
	r.Columns = columns(v.AdditionalPrinterColumns)
	if raw := v.rawSchema(); raw != nil {
		s, err := ParseSchema(raw)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		r.PruneAndDefault = s.PruneAndDefault
		r.ValidateCreate, r.ValidateUpdate = s.validators()
		if s.hasDefaults() {
			// kube's storage decoder defaults what it reads, so objects
			// stored before a default was added, and statuses a create
			// dropped, read back with their defaults. Schemas without
			// defaults keep reads that serve the stored bytes.
			r.FromStorage = func(_ context.Context, obj api.Object) (api.Object, error) {
				obj["apiVersion"] = r.APIVersion()
				s.PruneAndDefault(obj)
				return obj, nil
			}
		}
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

// convertThrough makes r's objects convert to and from stored's through
// the conversion webhook, each then pruned and defaulted by the schema of
// the version it is in, as kube's schema-coercing converter and defaulter
// do after a conversion.
func convertThrough(conv *webhookConverter, r, stored *resource.Resource) {
	in := func(to *resource.Resource) func(context.Context, api.Object) (api.Object, error) {
		return func(ctx context.Context, obj api.Object) (api.Object, error) {
			out, err := conv.convert(ctx, obj, to.APIVersion())
			if err == nil && to.PruneAndDefault != nil {
				to.PruneAndDefault(out)
			}
			return out, err
		}
	}
	r.FromStorage, r.ToStorage = in(r), in(stored)
}

// defaultColumns are a custom resource's columns when its version lists
// none: its age, as kube's serveDefaultColumnsIfEmpty.
var defaultColumns = []printerColumn{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: resource.CreationTimestampDescription}}

// columns turns additionalPrinterColumns into Table columns. Like kube's
// table convertor, it stops at the first path it cannot parse, keeping the
// columns before it.
func columns(pcs []printerColumn) []resource.Column {
	if len(pcs) == 0 {
		pcs = defaultColumns
	}
	out := make([]resource.Column, 0, len(pcs))
	for _, pc := range pcs {
		path, err := ParsePath(pc.JSONPath)
		if err != nil {
			return out
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
	return out
}

// cell computes a column's cell as kube's CRD table convertor does from the
// first value the path finds: strings print any value as JSONPath does,
// integers truncate, dates are the age of an RFC 3339 timestamp; a value
// of another type, or none, is an empty cell.
func cell(typ string, path Path) func(api.Object) any {
	return func(o api.Object) any {
		v, ok := path.Eval(map[string]any(o))
		if !ok {
			return nil
		}
		v = kubeNumbers(v)
		switch typ {
		case "string":
			if v == nil {
				return "<no value>" // Go templates' text for a missing value
			}
			return text(v)
		case "integer":
			switch n := v.(type) {
			case int64:
				return n
			case float64:
				return int64(n)
			}
		case "number":
			switch n := v.(type) {
			case int64:
				return float64(n)
			case float64:
				return n
			}
		case "boolean":
			if b, ok := v.(bool); ok {
				return b
			}
		case "date":
			if s, ok := v.(string); ok {
				return age(s)
			}
		}
		return nil
	}
}

// age is a date cell: the time since an RFC 3339 timestamp, "<unknown>"
// for an empty or null one and "<invalid>" for any other text, as kube's
// metav1.Time query parameter parsing and ConvertToHumanReadableDateType.
func age(s string) string {
	if s == "" || s == "null" {
		return "<unknown>"
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return "<invalid>"
	}
	return resource.HumanDuration(time.Since(t))
}

// kubeNumbers returns v with its numbers as kube's unstructured decoding
// has them: int64 when the literal is an integer that fits, else float64.
// Cells depend on it: "1.0" prints as "1" and truncates as an integer.
func kubeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = kubeNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = kubeNumbers(e)
		}
		return out
	}
	return v
}

// text prints a value as kube's JSONPath printing does: objects and arrays
// as compact JSON, anything else with fmt's default format.
func text(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return fmt.Sprint(v)
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
