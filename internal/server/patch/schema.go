package patch

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

// builtins are the served built-in kinds by "group/Kind".
var builtins = map[string]*Schema{
	"/Namespace": kindOf(map[string]*Schema{
		"spec": structOf(nil),
		"status": structOf(map[string]*Schema{
			"conditions": {List: MapList, Keys: []string{"type"}, Elem: structOf(nil)},
		}),
	}),
	"/ConfigMap": kindOf(nil),
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":   webhookConfiguration,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration": webhookConfiguration,
	"/Secret": kindOf(nil),
	"/ServiceAccount": kindOf(map[string]*Schema{
		"secrets":          {List: MapList, Keys: []string{"name"}, Elem: structOf(nil)},
		"imagePullSecrets": {List: Atomic},
	}),
	"/Event": kindOf(map[string]*Schema{
		"involvedObject": structOf(nil),
		"source":         structOf(nil),
		"series":         structOf(nil),
		"related":        structOf(nil),
	}),
}

// object is any other kind (custom objects): metadata is known, the rest
// is deduced.
// webhookConfiguration is admissionregistration.k8s.io/v1's
// MutatingWebhookConfiguration and ValidatingWebhookConfiguration: webhooks
// and their matchConditions merge by name, other lists are atomic.
var webhookConfiguration = kindOf(map[string]*Schema{
	"webhooks": {List: MapList, Keys: []string{"name"}, Elem: structOf(map[string]*Schema{
		"clientConfig":      structOf(map[string]*Schema{"service": structOf(nil)}),
		"namespaceSelector": structOf(nil),
		"objectSelector":    structOf(nil),
		"matchConditions":   {List: MapList, Keys: []string{"name"}, Elem: structOf(nil)},
	})},
})

var object = kindOf(nil)

// SchemaFor returns the merge schema of kind in group.
func SchemaFor(group, kind string) *Schema {
	if s, ok := builtins[group+"/"+kind]; ok {
		return s
	}
	return object
}
