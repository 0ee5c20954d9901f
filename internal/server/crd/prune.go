package crd

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/listwatch/listwatch/client/api"
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
	w := pruning{path: make([]pathStep, 0, 8)} // most objects are no deeper
	s.pruneObject(map[string]any(obj), true, s.PreserveUnknownFields, &w)
	slices.Sort(w.unknown)
	return w.unknown
}

// pruning is the state of a PruneAndDefault walk: where it is, and the
// fields it dropped. The path is spelled out only for a dropped field,
// which is rare, so that a walk allocates no path.
type pruning struct {
	path    []pathStep
	unknown []string
}

// pathStep is a field's name, or an item's index (item >= 0).
type pathStep struct {
	field string
	item  int
}

func (w *pruning) push(p pathStep) { w.path = append(w.path, p) }
func (w *pruning) pop()            { w.path = w.path[:len(w.path)-1] }

// drop records the field at the path, spelled as the causes name fields:
// "spec.list[0].bar".
func (w *pruning) drop() {
	var b []byte
	for i, p := range w.path {
		switch {
		case p.item >= 0:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(p.item), 10)
			b = append(b, ']')
		case i > 0:
			b = append(b, '.')
			fallthrough
		default:
			b = append(b, p.field...)
		}
	}
	w.unknown = append(w.unknown, string(b))
}

// pruneObject prunes and defaults the fields of m, found at w's path.
// typeMeta says m is a resource (the root, or an
// x-kubernetes-embedded-resource), whose apiVersion, kind and metadata are
// not the schema's to judge; keep keeps the fields s does not know.
func (s *Schema) pruneObject(m map[string]any, typeMeta, keep bool, w *pruning) {
	s.applyDefaults(m)
	for k, v := range m {
		w.push(pathStep{field: k, item: -1})
		switch prop := s.Properties[k]; {
		case typeMeta && (k == "apiVersion" || k == "kind"):
		case typeMeta && k == "metadata":
			pruneMeta(v, w)
		case prop != nil && v == nil && !prop.Nullable:
			delete(m, k) // a null applyDefaults had no default for
		case prop != nil:
			prop.prune(v, w)
		case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			if v, keep := s.AdditionalProperties.Schema.nullDefault(v); !keep {
				delete(m, k)
			} else {
				m[k] = v
				s.AdditionalProperties.Schema.prune(v, w)
			}
		case keep || (s.AdditionalProperties != nil && s.AdditionalProperties.Allows):
		default:
			delete(m, k)
			w.drop()
		}
		w.pop()
	}
}

// applyDefaults sets the default of every property of s absent from m or
// null without being nullable. (pruneObject drops such nulls without a
// default.)
func (s *Schema) applyDefaults(m map[string]any) {
	for _, k := range s.defaulted {
		p := s.Properties[k]
		if v, present := m[k]; !present || v == nil && !p.Nullable {
			m[k], _ = p.defaultValue()
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

// compileDefault decodes s's default once and lists the properties that
// have one; the properties are compiled already.
func (s *Schema) compileDefault() {
	s.dflt, s.hasDefault, s.defaulted = nil, false, nil
	for k, p := range s.Properties {
		if p != nil && p.hasDefault {
			s.defaulted = append(s.defaulted, k)
		}
	}
	if len(s.Default) == 0 {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(s.Default))
	dec.UseNumber()
	if err := dec.Decode(&s.dflt); err == nil && s.dflt != nil {
		s.hasDefault = true // a null default is none, as kube reads it
	}
}

// defaultValue is a fresh copy of the default, so objects never share it
// (a scalar is immutable and shared).
func (s *Schema) defaultValue() (any, bool) {
	switch d := s.dflt.(type) {
	case map[string]any:
		return map[string]any(api.Object(d).DeepCopy()), true
	case []any:
		return api.Object{"": d}.DeepCopy()[""], true
	}
	return s.dflt, s.hasDefault
}

// prune prunes and defaults v, found at w's path, against s. As kube's
// pruning, an object is pruned whatever type s names (an object where a
// string belongs keeps no field), and so are the items of a list where s
// has no items schema, unless s preserves unknown fields.
func (s *Schema) prune(v any, w *pruning) {
	s.pruneKeeping(v, s.PreserveUnknownFields, w)
}

// anyItem is the schema of the items of a list whose schema names none.
var anyItem = &Schema{}

// pruneKeeping is prune keeping the fields s does not know when keep is
// set: as kube's skipPrune, the items of a list that preserves unknown
// fields keep theirs, items of items too, while the properties they
// declare are pruned as usual.
func (s *Schema) pruneKeeping(v any, keep bool, w *pruning) {
	switch v := v.(type) {
	case map[string]any:
		s.pruneObject(v, s.EmbeddedResource, keep, w)
	case []any:
		items := s.Items
		if items == nil && keep {
			return
		}
		if items == nil {
			items = anyItem
		}
		for i := range v {
			if v[i] == nil && !items.Nullable {
				if d, ok := items.defaultValue(); ok {
					v[i] = d
				}
			}
			w.push(pathStep{item: i})
			items.pruneKeeping(v[i], keep || items.PreserveUnknownFields, w)
			w.pop()
		}
	}
}

// pruneMeta drops the fields of a metadata object that ObjectMeta lacks.
func pruneMeta(v any, w *pruning) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k := range m {
		if !slices.Contains(objectMetaFields, k) {
			delete(m, k)
			w.push(pathStep{field: k, item: -1})
			w.drop()
			w.pop()
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
