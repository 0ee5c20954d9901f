package patch

import "github.com/listwatch/listwatch/internal/kubespec"

// ListType says how a list merges, in a strategic merge patch and in
// server-side apply (kube's patchStrategy and x-kubernetes-list-type).
type ListType int

const (
	// Atomic lists are replaced whole (patchStrategy replace, listType atomic).
	Atomic ListType = iota
	// SetList lists hold primitives and merge as a set (patchStrategy merge,
	// listType set), keeping order.
	SetList
	// MapList lists hold objects merged by Keys (patchMergeKey, listMapKeys).
	MapList
)

// Schema describes how one node of an object merges and which of its
// fields are themselves members of a field set. A nil Schema is kube's
// "deduced" schema for objects without one: maps merge key by key, lists
// are atomic, every map entry is a member.
type Schema struct {
	// Struct is true when the node's fields are declared (a Go struct in
	// kube): a declared field holding a non-empty map or list is not itself
	// a field-set member, only what it holds is.
	Struct bool
	// Fields are the schemas of declared fields; others use Elem.
	Fields map[string]*Schema
	// Elem is the schema of a map's values or a list's items.
	Elem *Schema
	// List is how a list at this node merges.
	List ListType
	// Keys are a MapList's merge keys (strategic merge uses the first).
	Keys []string
}

// field returns the schema of field name of the map at s.
func (s *Schema) field(name string) *Schema {
	if s == nil {
		return nil
	}
	if f, ok := s.Fields[name]; ok {
		return f
	}
	return s.Elem
}

func (s *Schema) elem() *Schema {
	if s == nil {
		return nil
	}
	return s.Elem
}

func (s *Schema) listType() ListType {
	if s == nil {
		return Atomic
	}
	return s.List
}

func (s *Schema) isStruct() bool { return s != nil && s.Struct }

// structOf is a struct node with the given declared fields.
func structOf(fields map[string]*Schema) *Schema { return &Schema{Struct: true, Fields: fields} }

// objectMeta is meta/v1 ObjectMeta: finalizers merge as a set,
// ownerReferences by uid, managedFields are replaced.
var objectMeta = structOf(map[string]*Schema{
	"finalizers":      {List: SetList},
	"ownerReferences": {List: MapList, Keys: []string{"uid"}, Elem: structOf(nil)},
	"managedFields":   {List: Atomic},
})

// kindOf is a top-level object with metadata and the given declared fields.
func kindOf(fields map[string]*Schema) *Schema {
	all := map[string]*Schema{"metadata": objectMeta}
	for k, v := range fields {
		all[k] = v
	}
	return structOf(all)
}

// object is any other kind (custom objects): metadata is known, the rest
// is deduced.
var object = kindOf(nil)

// SchemaFor returns the merge schema of kind in group/version: kube's, from
// its published definition, for the kinds kube publishes.
func SchemaFor(group, version, kind string) *Schema {
	if name := kubespec.DefinitionName(group, version, kind); name != "" {
		return kubeSchema(name)
	}
	return object
}
