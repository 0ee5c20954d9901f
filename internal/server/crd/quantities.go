package crd

import "github.com/listwatch/listwatch/internal/server/defaulting"

// quantityDefinition is the definition kube's schemas give a Quantity.
const quantityDefinition = "io.k8s.apimachinery.pkg.api.resource.Quantity"

// quantityPlaces marks where a built-in kind's objects hold quantities, so
// that each is stored as kube's Quantity encodes it: a cpu of "0.5" or 0.5
// is stored as "500m", "1000m" as "1", a canonical text as written.
type quantityPlaces struct {
	here   bool
	fields map[string]*quantityPlaces
	items  *quantityPlaces // an array's elements
	values *quantityPlaces // a map's values (additionalProperties)
}

// quantitiesIn finds the quantities of a schema node whose definitions
// are found by defs; nil when it has none. open holds the definitions
// being walked (a recursive one has no quantities kube would encode).
func quantitiesIn(node map[string]any, defs func(string) map[string]any, open map[string]bool) *quantityPlaces {
	if name, ok := refName(node); ok {
		if name == quantityDefinition {
			return &quantityPlaces{here: true}
		}
		def := defs(name)
		if def == nil || open[name] {
			return nil
		}
		open[name] = true
		defer delete(open, name)
		return quantitiesIn(def, defs, open)
	}
	p := &quantityPlaces{}
	props, _ := node["properties"].(map[string]any)
	for k, v := range props {
		sub, _ := v.(map[string]any)
		if q := quantitiesIn(sub, defs, open); q != nil {
			if p.fields == nil {
				p.fields = map[string]*quantityPlaces{}
			}
			p.fields[k] = q
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		p.items = quantitiesIn(items, defs, open)
	}
	if values, ok := node["additionalProperties"].(map[string]any); ok {
		p.values = quantitiesIn(values, defs, open)
	}
	if p.fields == nil && p.items == nil && p.values == nil {
		return nil
	}
	return p
}

// canonicalize returns v with the quantities p marks in kube's encoding;
// maps are changed in place.
func (p *quantityPlaces) canonicalize(v any) any {
	if p.here {
		if s, ok := defaulting.CanonicalQuantity(v); ok {
			return s
		}
		return v
	}
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range p.fields {
			if x, ok := v[k]; ok {
				v[k] = sub.canonicalize(x)
			}
		}
		if p.values != nil {
			for k, x := range v {
				v[k] = p.values.canonicalize(x)
			}
		}
	case []any:
		if p.items != nil {
			for i, x := range v {
				v[i] = p.items.canonicalize(x)
			}
		}
	}
	return v
}
