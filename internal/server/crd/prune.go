package crd

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/listwatch/listwatch/api"
)

// objectMetaFields are the fields of meta/v1 ObjectMeta; any other field of
// a custom object's metadata is pruned, as kube's decoder drops it.
var objectMetaFields = []string{
	"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
	"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
	"annotations", "ownerReferences", "finalizers", "managedFields",
}

// PruneAndDefault does to a custom object what kube's decoder does: it
// applies the schema's defaults (replacing nulls of non-nullable fields that
// have one, and dropping those that have none) and drops every field the
// schema does not know, unless x-kubernetes-preserve-unknown-fields keeps
// it. apiVersion, kind and known metadata fields are always kept. It returns
// the paths of the dropped fields ("spec.foo", "spec.list[0].bar"), sorted.
func (s *Schema) PruneAndDefault(obj api.Object) []string {
	var unknown []string
	s.pruneObject(map[string]any(obj), "", true, s.PreserveUnknownFields, &unknown)
	slices.Sort(unknown)
	return unknown
}

// pruneObject prunes and defaults the fields of m, found at path. typeMeta
// says m is a resource (the root, or an x-kubernetes-embedded-resource),
// whose apiVersion, kind and metadata are not the schema's to judge; keep
// keeps the fields s does not know.
func (s *Schema) pruneObject(m map[string]any, path string, typeMeta, keep bool, unknown *[]string) {
	s.applyDefaults(m)
	for k, v := range m {
		p := join(path, k)
		switch {
		case typeMeta && (k == "apiVersion" || k == "kind"):
		case typeMeta && k == "metadata":
			pruneMeta(v, p, unknown)
		case s.Properties[k] != nil:
			s.Properties[k].prune(v, p, unknown)
		case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			if v, keep := s.AdditionalProperties.Schema.nullDefault(v); !keep {
				delete(m, k)
			} else {
				m[k] = v
				s.AdditionalProperties.Schema.prune(v, p, unknown)
			}
		case keep || (s.AdditionalProperties != nil && s.AdditionalProperties.Allows):
		default:
			delete(m, k)
			*unknown = append(*unknown, p)
		}
	}
}

// applyDefaults sets the default of every property of s absent from m or
// null without being nullable, and drops such nulls without a default.
func (s *Schema) applyDefaults(m map[string]any) {
	for k, p := range s.Properties {
		if p == nil {
			continue
		}
		v, present := m[k]
		if present && (v != nil || p.Nullable) {
			continue
		}
		if d, ok := p.defaultValue(); ok {
			m[k] = d
		} else if present {
			delete(m, k)
		}
	}
}

// nullDefault is what kube's decoder makes of v, a value s describes that
// no property names (an additionalProperties value): a null where s is not
// nullable takes the default, or is dropped (keep false) without one.
func (s *Schema) nullDefault(v any) (_ any, keep bool) {
	if v != nil || s.Nullable {
		return v, true
	}
	return s.defaultValue()
}

// hasDefaults reports whether s or a schema below it has a default.
func (s *Schema) hasDefaults() bool {
	return len(s.Default) > 0 || slices.ContainsFunc(s.children(), (*Schema).hasDefaults)
}

// defaultValue decodes a fresh copy of the default, so objects never share it.
func (s *Schema) defaultValue() (any, bool) {
	if len(s.Default) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(s.Default))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || v == nil {
		return nil, false // a null default is none, as kube reads it
	}
	return v, true
}

// prune prunes and defaults v, found at path, against s. As kube's
// pruning, an object is pruned whatever type s names (an object where a
// string belongs keeps no field), and so are the items of a list where s
// has no items schema, unless s preserves unknown fields.
func (s *Schema) prune(v any, path string, unknown *[]string) {
	s.pruneKeeping(v, path, s.PreserveUnknownFields, unknown)
}

// pruneKeeping is prune keeping the fields s does not know when keep is
// set: as kube's skipPrune, the items of a list that preserves unknown
// fields keep theirs, items of items too, while the properties they
// declare are pruned as usual.
func (s *Schema) pruneKeeping(v any, path string, keep bool, unknown *[]string) {
	switch v := v.(type) {
	case map[string]any:
		s.pruneObject(v, path, s.EmbeddedResource, keep, unknown)
	case []any:
		items := s.Items
		if items == nil && keep {
			return
		}
		if items == nil {
			items = &Schema{}
		}
		for i := range v {
			if d, ok := items.defaultValue(); ok && v[i] == nil && !items.Nullable {
				v[i] = d
			}
			items.pruneKeeping(v[i], path+"["+strconv.Itoa(i)+"]", keep || items.PreserveUnknownFields, unknown)
		}
	}
}

// pruneMeta drops the fields of a metadata object that ObjectMeta lacks.
func pruneMeta(v any, path string, unknown *[]string) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k := range m {
		if !slices.Contains(objectMetaFields, k) {
			delete(m, k)
			*unknown = append(*unknown, join(path, k))
		}
	}
}

// join appends a field name to a path.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
