// Package defaulting applies to built-in kinds the defaults kube-apiserver
// 1.37 sets in Go, which its published OpenAPI schemas do not carry: the
// SetDefaults_* functions of k8s.io/kubernetes pkg/apis/<group>/<version>
// /defaults.go and the +default markers of k8s.io/api, called for every nested
// type as the generated SetObjectDefaults_* of zz_generated.defaults.go call
// them, with the feature gates at their 1.37 defaults.
//
// Objects are api.Object as the server decodes request bodies (numbers as
// json.Number, float64 also read). A test in the interop module proves the
// result equal to kube's own defaulting of the typed object.
//
// # Shape
//
// Each defaulted Go type is a node: the SetDefaults function of that type
// (plain Go where kube's is not regular), then its fields in declaration
// order, either a +default marker value or a nested node; the order is the
// generated code's, so a default that reads another field sees what kube's
// sees. Nodes of shared types (PodSpec, Container, Volume, PVC spec) are
// built once and reached from every kind that embeds them.
//
// # Caveats
//
// What kube's typed encoding makes of an object (omitting empty maps and
// zero values, writing resource quantities in canonical form) is not
// reproduced here: a default kube sets that its encoder then drops (a
// ConfigMap's empty data, an empty LimitRange default) is not set, and a
// quantity keeps its text unless SetDefaults_ResourceList rounds it.
package defaulting

import (
	"encoding/json"
	"strconv"

	"github.com/listwatch/listwatch/client/api"
)

// For returns the defaulting kube applies to objects of the kind on create
// and update (and on every decode, including reads from storage), or nil
// when kube has none that shows in the stored object.
func For(group, version, kind string) func(obj api.Object) {
	n := kinds[gvk{group, version, kind}]
	if n == nil {
		return nil
	}
	return func(obj api.Object) { n.apply(obj) }
}

type gvk struct{ group, version, kind string }

// A node is what kube's generated defaulting does at one Go type: set (its
// SetDefaults function), then each field in order.
type node struct {
	set    func(m map[string]any)
	fields []field
}

type shape int

const (
	// leaf is a +default marker on a non-pointer field: set when zero.
	leaf shape = iota
	// leafPtr is a +default marker on a pointer field: set when nil.
	leafPtr
	// value is a struct field: walked even when absent, kept if it got a default.
	value
	// pointer is a pointer to a struct: walked when present.
	pointer
	// list is a slice of structs: each element walked.
	list
)

type field struct {
	name  string
	shape shape
	def   any // leaf and leafPtr
	node  *node
}

func def(name string, v any) field      { return field{name: name, shape: leaf, def: v} }
func defPtr(name string, v any) field   { return field{name: name, shape: leafPtr, def: v} }
func val(name string, n *node) field    { return field{name: name, shape: value, node: n} }
func ptr(name string, n *node) field    { return field{name: name, shape: pointer, node: n} }
func listOf(name string, n *node) field { return field{name: name, shape: list, node: n} }

func (n *node) apply(m map[string]any) {
	if n.set != nil {
		n.set(m)
	}
	for _, f := range n.fields {
		f.apply(m)
	}
}

func (f field) apply(m map[string]any) {
	switch f.shape {
	case leaf:
		if isZero(m[f.name]) {
			m[f.name] = f.def
		}
	case leafPtr:
		if m[f.name] == nil {
			m[f.name] = f.def
		}
	case value:
		if child, ok := m[f.name].(map[string]any); ok {
			f.node.apply(child)
		} else if m[f.name] == nil {
			child := map[string]any{}
			if f.node.apply(child); len(child) > 0 {
				m[f.name] = child
			}
		}
	case pointer:
		if child, ok := m[f.name].(map[string]any); ok {
			f.node.apply(child)
		}
	case list:
		items, _ := m[f.name].([]any)
		for _, it := range items {
			if child, ok := it.(map[string]any); ok {
				f.node.apply(child)
			}
		}
	}
}

// isZero reports whether v decodes to the zero value of a Go string, number
// or bool: absent, null, "", 0 or false.
func isZero(v any) bool {
	if f, ok := float(v); ok {
		return f == 0
	}
	return v == nil || v == "" || v == false
}

// float reads a JSON number, as json.Number or float64.
func float(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

// number is a default integer as the decoder would have read it.
func number(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }

// child returns m[key] as a map, making and attaching an empty one when it is
// absent: for SetDefaults functions that write into a nested struct field.
// It returns nil when m is nil or m[key] is something else (left to
// validation).
func child(m map[string]any, key string) map[string]any {
	if m == nil {
		return nil
	}
	switch v := m[key].(type) {
	case map[string]any:
		return v
	case nil:
		c := map[string]any{}
		m[key] = c
		return c
	}
	return nil
}

// setZero sets m[key] to v when it reads as a Go zero value (a non-pointer
// field), setNil when it is absent or null (a pointer field).
func setZero(m map[string]any, key string, v any) {
	if m != nil && isZero(m[key]) {
		m[key] = v
	}
}

func setNil(m map[string]any, key string, v any) {
	if m != nil && m[key] == nil {
		m[key] = v
	}
}

// str reads a string field; anything else reads as "".
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func items(m map[string]any, key string) []map[string]any {
	l, _ := m[key].([]any)
	out := make([]map[string]any, 0, len(l))
	for _, it := range l {
		if c, ok := it.(map[string]any); ok {
			out = append(out, c)
		}
	}
	return out
}

// copyMap is a shallow copy: kube's defaults that reuse a map (labels, a
// resource list) must not alias it in ours, where later writes would show
// in both places.
func copyMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
