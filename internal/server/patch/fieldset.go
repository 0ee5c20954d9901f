package patch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/listwatch/listwatch/internal/server/apierror"
)

// Set is a set of field paths, kept as a tree whose edges are path
// elements in kube's FieldsV1 form: "f:name" (a map key), "k:{...}" (a list
// item by its keys), "v:..." (a set item by value), "i:N" (an index). A
// node is a member when its path is in the set; its children extend it.
// The nil *Set is the empty set. Operations return new sets.
type Set struct {
	member   bool
	children map[string]*Set
}

func (s *Set) empty() bool { return s == nil || (!s.member && len(s.children) == 0) }

// ensure returns the child at pe, creating it.
func (s *Set) ensure(pe string) *Set {
	if s.children == nil {
		s.children = map[string]*Set{}
	}
	c := s.children[pe]
	if c == nil {
		c = &Set{}
		s.children[pe] = c
	}
	return c
}

func (s *Set) child(pe string) *Set {
	if s == nil {
		return nil
	}
	return s.children[pe]
}

// insert adds one path.
func (s *Set) insert(path ...string) {
	n := s
	for _, pe := range path {
		n = n.ensure(pe)
	}
	n.member = true
}

// combine builds the set whose membership is op of a's and b's, node by
// node, without empty nodes.
func combine(a, b *Set, op func(inA, inB bool) bool) *Set {
	if a == nil && b == nil {
		return nil
	}
	out := &Set{member: op(a != nil && a.member, b != nil && b.member)}
	ac, bc := a.childrenOrNil(), b.childrenOrNil()
	for pe, c := range ac {
		out.combineChild(pe, c, bc[pe], op, len(ac))
	}
	for pe, c := range bc {
		if _, inA := ac[pe]; !inA {
			out.combineChild(pe, nil, c, op, len(bc))
		}
	}
	if out.empty() {
		return nil
	}
	return out
}

// combineChild sets s's child at pe to combine(a, b, op) unless that is
// empty; n sizes the children's map.
func (s *Set) combineChild(pe string, a, b *Set, op func(inA, inB bool) bool, n int) {
	c := combine(a, b, op)
	if c.empty() {
		return
	}
	if s.children == nil {
		s.children = make(map[string]*Set, n)
	}
	s.children[pe] = c
}

func union(a, b *Set) *Set        { return combine(a, b, func(x, y bool) bool { return x || y }) }
func difference(a, b *Set) *Set   { return combine(a, b, func(x, y bool) bool { return x && !y }) }
func intersection(a, b *Set) *Set { return combine(a, b, func(x, y bool) bool { return x && y }) }

// paths returns the first limit members' paths in sorted order (all of
// them if limit < 0).
func (s *Set) paths(limit int) [][]string {
	var out [][]string
	var walk func(n *Set, prefix []string)
	walk = func(n *Set, prefix []string) {
		if len(out) == limit {
			return
		}
		if n.member {
			out = append(out, slices.Clone(prefix))
		}
		for _, pe := range sortedSetKeys(n.children) {
			walk(n.children[pe], append(prefix, pe))
		}
	}
	if s != nil {
		walk(s, nil)
	}
	return out
}

// size is the number of members.
func (s *Set) size() int {
	if s == nil {
		return 0
	}
	n := 0
	if s.member {
		n = 1
	}
	for _, c := range s.children {
		n += c.size()
	}
	return n
}

func sortedSetKeys(m map[string]*Set) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// FieldsV1 returns the set in kube's FieldsV1 JSON form: a member with
// children carries ".": {}.
func (s *Set) FieldsV1() map[string]any {
	out := map[string]any{}
	if s == nil {
		return out
	}
	if s.dotted() {
		out["."] = map[string]any{}
	}
	for pe, c := range s.children {
		out[pe] = c.FieldsV1()
	}
	return out
}

// sameFieldsV1 reports whether a and b have the same FieldsV1 form,
// without building it: the same children, each the same, and the same
// "." (a member with children; a childless member is {}, as no member).
func sameFieldsV1(a, b *Set) bool {
	ac, bc := a.childrenOrNil(), b.childrenOrNil()
	if len(ac) != len(bc) || a.dotted() != b.dotted() {
		return false
	}
	for pe, c := range ac {
		d, ok := bc[pe]
		if !ok || !sameFieldsV1(c, d) {
			return false
		}
	}
	return true
}

func (s *Set) childrenOrNil() map[string]*Set {
	if s == nil {
		return nil
	}
	return s.children
}

// dotted reports whether FieldsV1 writes "." for s.
func (s *Set) dotted() bool { return s != nil && s.member && len(s.children) > 0 }

// ParseFieldsV1 reads a set from kube's FieldsV1 JSON form.
func ParseFieldsV1(v any) (*Set, error) { return parseFieldsV1(v, false) }

// parseFieldsV1 is ParseFieldsV1; with utf8Keys, a key that is not valid
// UTF-8 is an error too.
func parseFieldsV1(v any, utf8Keys bool) (*Set, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("fieldsV1 must be an object, not %T", v)
	}
	s := &Set{member: len(m) == 0}
	for pe, c := range m {
		if utf8Keys && !utf8.ValidString(pe) {
			return nil, fmt.Errorf("path element %q is not valid UTF-8", pe)
		}
		if pe == "." {
			s.member = true
			continue
		}
		if err := checkPathElement(pe); err != nil {
			return nil, err
		}
		child, err := parseFieldsV1(c, utf8Keys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pe, err)
		}
		if s.children == nil {
			s.children = make(map[string]*Set, len(m))
		}
		s.children[pe] = child
	}
	return s, nil
}

func checkPathElement(pe string) error {
	kind, rest, ok := strings.Cut(pe, ":")
	if !ok || !strings.Contains("fkvi", kind) || len(kind) != 1 {
		return fmt.Errorf("invalid path element %q", pe)
	}
	if kind == "k" || kind == "v" {
		var v any
		if err := json.Unmarshal([]byte(rest), &v); err != nil {
			return fmt.Errorf("invalid path element %q: %w", pe, err)
		}
	}
	return nil
}

// pathString writes a path as kube's messages do: .data.key,
// .metadata.ownerReferences[uid="x"], .metadata.finalizers[="f"]; cut to
// apierror.MaxItemRunes, as a message quotes it.
func pathString(path []string) string {
	var b strings.Builder
	for _, pe := range path {
		if b.Len() > apierror.MaxItemRunes {
			break
		}
		kind, rest, _ := strings.Cut(pe, ":")
		switch kind {
		case "f":
			b.WriteString("." + rest)
		case "k":
			b.WriteString("[" + keyString(rest) + "]")
		case "v":
			b.WriteString("[=" + rest + "]")
		default:
			b.WriteString("[" + rest + "]")
		}
	}
	return apierror.Truncate(b.String(), apierror.MaxItemRunes)
}

// keyString is k:{"a":"x","b":1} as a="x",b=1.
func keyString(keys string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(keys), &m); err != nil {
		return keys
	}
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+"="+string(v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// itemElement is the path element of a list item under schema s (a
// granular list); ok is false for an item that has none (not a primitive
// in a set, no keys in a map list).
func itemElement(item any, s *Schema) (string, bool) {
	if s.listType() == SetList {
		if isComposite(item) {
			return "", false
		}
		return "v:" + jsonKey(item), true
	}
	m, isMap := item.(map[string]any)
	if !isMap {
		return "", false
	}
	keys := map[string]any{}
	for _, k := range s.Keys {
		v, has := m[k]
		if !has {
			return "", false
		}
		keys[k] = v
	}
	return "k:" + jsonKey(keys), true
}

// granularItems reports whether a list under s is merged item by item
// and each item has a path element.
func granularItems(l []any, s *Schema) bool {
	if s.listType() == Atomic {
		return false
	}
	seen := map[string]bool{}
	for _, it := range l {
		pe, ok := itemElement(it, s)
		if !ok || seen[pe] {
			return false
		}
		seen[pe] = true
	}
	return true
}

// fieldSet is the set of fields a value sets, as kube's ToFieldSet: every
// leaf, every list item, every empty map or null, every entry of a map
// whose keys are not declared.
func fieldSet(v map[string]any, s *Schema) *Set {
	root := &Set{}
	addMapFields(root, v, s)
	return union(root, nil)
}

func addFields(n *Set, v any, s *Schema) {
	switch v := v.(type) {
	case map[string]any:
		addMapFields(n, v, s)
	case []any:
		if !granularItems(v, s) {
			n.member = true
			return
		}
		for _, it := range v {
			pe, _ := itemElement(it, s)
			c := n.ensure(pe)
			addFields(c, it, s.elem())
			c.member = true
		}
	default:
		n.member = true
	}
}

func addMapFields(n *Set, m map[string]any, s *Schema) {
	for k, v := range m {
		c := n.ensure("f:" + k)
		addFields(c, v, s.field(k))
		if em, isMap := v.(map[string]any); v == nil || (isMap && len(em) == 0) || !s.isStruct() {
			c.member = true
		}
	}
}
