package patch

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Strategic merge patch directives (kube's strategicpatch package).
const (
	directive        = "$patch"
	retainKeys       = "$retainKeys"
	deleteFromPrefix = "$deleteFromPrimitiveList/"
	setOrderPrefix   = "$setElementOrder/"

	replaceDirective = "replace"
	deleteDirective  = "delete"
	mergeDirective   = "merge"
)

// applyStrategic applies a strategic merge patch to current under schema s.
func applyStrategic(current, patch []byte, s *Schema) ([]byte, error) {
	cur, err := decodeMap(current)
	if err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	p, err := decodeMap(patch)
	if err != nil {
		return nil, badRequest("invalid JSON document: %v", err)
	}
	merged, err := MergeStrategic(cur, p, s)
	if err != nil {
		return nil, err
	}
	return json.Marshal(merged)
}

// MergeStrategic merges patch into original (which it may change) as kube's
// strategic merge patch does under schema s: maps merge recursively and
// null deletes; lists are replaced unless s merges them; the $patch,
// $retainKeys, $deleteFromPrimitiveList and $setElementOrder directives
// apply. Errors are Status errors (400, or 422 as kube).
func MergeStrategic(original, patch map[string]any, s *Schema) (map[string]any, error) {
	if original == nil {
		original = map[string]any{}
	}
	if d, ok := patch[directive]; ok {
		switch d {
		case replaceDirective:
			return MergeStrategic(nil, without(patch, directive), s)
		case deleteDirective:
			return map[string]any{}, nil
		case mergeDirective:
			patch = without(patch, directive)
		default:
			return nil, badRequest("unknown patch type: %v in map: %v", d, patch)
		}
	}
	if keys, ok := patch[retainKeys]; ok {
		if err := retain(original, patch, keys); err != nil {
			return nil, err
		}
	}
	fields, err := patchedFields(patch)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		if err := mergeField(original, patch, f, s.field(f)); err != nil {
			return nil, err
		}
	}
	return original, nil
}

// patchedFields returns the fields a patch map touches, directly or by a
// list directive, in a stable order.
func patchedFields(patch map[string]any) ([]string, error) {
	seen := map[string]bool{}
	var fields []string
	for _, k := range sortedKeys(patch) {
		f := k
		switch {
		case k == retainKeys:
			continue
		case strings.HasPrefix(k, deleteFromPrefix):
			f = strings.TrimPrefix(k, deleteFromPrefix)
		case strings.HasPrefix(k, setOrderPrefix):
			f = strings.TrimPrefix(k, setOrderPrefix)
		case strings.HasPrefix(k, "$"):
			return nil, badRequest("unknown directive %q in the patch", k)
		}
		if !seen[f] {
			seen[f] = true
			fields = append(fields, f)
		}
	}
	return fields, nil
}

// retain applies $retainKeys: original keeps only the listed keys, and
// the patch may set no other.
func retain(original, patch map[string]any, keys any) error {
	list, ok := keys.([]any)
	if !ok {
		return badRequest("invalid patch format of retainKeys")
	}
	keep := map[string]bool{}
	for _, k := range list {
		s, ok := k.(string)
		if !ok {
			return badRequest("invalid patch format of retainKeys")
		}
		keep[s] = true
	}
	for k, v := range patch {
		if v != nil && !strings.HasPrefix(k, "$") && !keep[k] {
			return invalid("patch content doesn't match retainKeys list")
		}
	}
	for k := range original {
		if !keep[k] {
			delete(original, k)
		}
	}
	return nil
}

// mergeField merges the patch's value of field f (and its list
// directives) into original[f].
func mergeField(original, patch map[string]any, f string, s *Schema) error {
	pv, inPatch := patch[f]
	_, hasDelete := patch[deleteFromPrefix+f]
	_, hasOrder := patch[setOrderPrefix+f]
	if _, isList := pv.([]any); hasDelete || hasOrder || isList {
		return mergeListField(original, patch, f, s)
	}
	if !inPatch {
		return nil
	}
	switch p := pv.(type) {
	case nil:
		delete(original, f)
	case map[string]any:
		om, _ := original[f].(map[string]any)
		merged, err := MergeStrategic(om, p, s)
		if err != nil {
			return err
		}
		original[f] = merged
	default:
		original[f] = pv
	}
	return nil
}

// mergeListField merges a list field: replaced when atomic, else merged
// as a set or by merge key, with the directives' deletions and order.
func mergeListField(original, patch map[string]any, f string, s *Schema) error {
	pv, inPatch := patch[f]
	if inPatch && pv == nil {
		delete(original, f)
		return nil
	}
	pl, isList := pv.([]any)
	if inPatch && !isList {
		return badRequest("invalid patch: %s must be a list", f)
	}
	if s.listType() == Atomic {
		if inPatch {
			original[f] = cleanList(pl, s.elem())
		}
		return nil
	}
	ol, _ := original[f].([]any)
	l := newMergeList(s, ol)
	if err := l.deleteFrom(patch[deleteFromPrefix+f]); err != nil {
		return err
	}
	if err := l.merge(pl); err != nil {
		return err
	}
	merged, err := l.ordered(patch[setOrderPrefix+f])
	if err != nil {
		return err
	}
	original[f] = merged
	return nil
}

// cleanList is an atomic list from a patch with the directives of the
// maps it holds applied.
func cleanList(l []any, s *Schema) []any {
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = v
		if m, ok := v.(map[string]any); ok {
			if merged, err := MergeStrategic(nil, m, s); err == nil {
				out[i] = merged
			}
		}
	}
	return out
}

// mergeList is a list being merged as a set or by merge key.
type mergeList struct {
	s        *Schema
	original []any // the list before the patch, for order
	items    []any
	patched  []any // the patch's items, in its order
}

func newMergeList(s *Schema, original []any) *mergeList {
	return &mergeList{s: s, original: original, items: append([]any(nil), original...)}
}

// key identifies an item: its merge key's value, or a primitive itself.
func (l *mergeList) key(item any) (string, error) {
	if l.s.List == SetList {
		if isComposite(item) {
			return "", badRequest("invalid patch format of primitive list: %v is not a primitive", item)
		}
		return jsonKey(item), nil
	}
	m, ok := item.(map[string]any)
	if !ok {
		return "", badRequest("invalid patch: %v in a list merged by %q is not an object", item, l.s.Keys[0])
	}
	v, ok := m[l.s.Keys[0]]
	if !ok {
		return "", badRequest("map: %v does not contain declared merge key: %s", m, l.s.Keys[0])
	}
	return jsonKey(v), nil
}

func (l *mergeList) index(items []any, k string) int {
	for i, it := range items {
		if ik, err := l.key(it); err == nil && ik == k {
			return i
		}
	}
	return -1
}

// deleteFrom applies $deleteFromPrimitiveList: every listed value goes.
func (l *mergeList) deleteFrom(del any) error {
	if del == nil {
		return nil
	}
	values, ok := del.([]any)
	if !ok || l.s.List != SetList {
		return badRequest("invalid patch format of primitive list")
	}
	for _, v := range values {
		if err := l.remove(v); err != nil {
			return err
		}
	}
	return nil
}

func (l *mergeList) remove(item any) error {
	k, err := l.key(item)
	if err != nil {
		return err
	}
	for i := l.index(l.items, k); i >= 0; i = l.index(l.items, k) {
		l.items = append(l.items[:i], l.items[i+1:]...)
	}
	return nil
}

// merge merges the patch's items: $patch elements first (delete one item,
// or replace the whole list), then each item into the one with its key.
func (l *mergeList) merge(patch []any) error {
	var plain []any
	for _, item := range patch {
		m, _ := item.(map[string]any)
		d, special := m[directive]
		if !special {
			plain = append(plain, item)
			continue
		}
		if err := l.special(d, m); err != nil {
			return err
		}
	}
	for _, item := range plain {
		if err := l.mergeItem(item); err != nil {
			return err
		}
	}
	return nil
}

// special applies one list element carrying $patch.
func (l *mergeList) special(d any, m map[string]any) error {
	switch d {
	case deleteDirective:
		if l.s.List == SetList {
			return badRequest("invalid patch format of primitive list: $patch: delete needs a merge key")
		}
		return l.remove(m)
	case replaceDirective:
		l.items, l.original = nil, nil
	case mergeDirective:
	default:
		return badRequest("unknown patch type: %v in map: %v", d, m)
	}
	return nil
}

func (l *mergeList) mergeItem(item any) error {
	k, err := l.key(item)
	if err != nil {
		return err
	}
	l.patched = append(l.patched, item)
	i := l.index(l.items, k)
	pm, isMap := item.(map[string]any)
	if !isMap {
		if i < 0 {
			l.items = append(l.items, item)
		}
		return nil
	}
	var om map[string]any
	if i >= 0 {
		om, _ = l.items[i].(map[string]any)
	}
	merged, err := MergeStrategic(om, pm, l.s.elem())
	if err != nil {
		return err
	}
	if i < 0 {
		l.items = append(l.items, merged)
	} else {
		l.items[i] = merged
	}
	return nil
}

// ordered returns the merged items in kube's order: the patch's items in
// the order $setElementOrder (or else the patch) gives them, the others in
// their original order, interleaved where the original order relates them.
func (l *mergeList) ordered(setOrder any) ([]any, error) {
	order := l.patched
	if setOrder != nil {
		list, ok := setOrder.([]any)
		if !ok {
			return nil, badRequest("invalid patch format of setElementOrder list")
		}
		order = list
	}
	rank, err := l.ranks(order)
	if err != nil {
		return nil, err
	}
	orig, err := l.ranks(l.original)
	if err != nil {
		orig = map[string]int{}
	}
	var inPatch, serverOnly []any
	for _, it := range l.items {
		if _, ok := rank[l.mustKey(it)]; ok {
			inPatch = append(inPatch, it)
		} else {
			serverOnly = append(serverOnly, it)
		}
	}
	sortByRank(inPatch, rank, l.mustKey)
	return interleave(serverOnly, inPatch, orig, l.mustKey), nil
}

// mustKey is key for items already validated.
func (l *mergeList) mustKey(item any) string {
	k, _ := l.key(item)
	return k
}

// ranks maps each item's key to its position in items.
func (l *mergeList) ranks(items []any) (map[string]int, error) {
	rank := make(map[string]int, len(items))
	for i, it := range items {
		k, err := l.key(it)
		if err != nil {
			return nil, badRequest("invalid patch format of setElementOrder list: %v", err)
		}
		if _, dup := rank[k]; !dup {
			rank[k] = i
		}
	}
	return rank, nil
}

// sortByRank orders items by rank, stably.
func sortByRank(items []any, rank map[string]int, key func(any) string) {
	for i := 1; i < len(items); i++ {
		for j := i; j > 0 && rank[key(items[j])] < rank[key(items[j-1])]; j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
}

// interleave merges two ordered lists keeping each one's order: an item of
// left goes before the next of right when the original order says so
// (kube's mergeSortedSlice).
func interleave(left, right []any, orig map[string]int, key func(any) string) []any {
	out := make([]any, 0, len(left)+len(right))
	i, j := 0, 0
	for i < len(left) || j < len(right) {
		if j == len(right) || (i < len(left) && before(key(left[i]), key(right[j]), orig)) {
			out = append(out, left[i])
			i++
			continue
		}
		out = append(out, right[j])
		j++
	}
	return out
}

func before(a, b string, orig map[string]int) bool {
	ia, okA := orig[a]
	ib, okB := orig[b]
	return okA && okB && ia < ib
}

func isComposite(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// jsonKey is a value's JSON, its identity in a list.
func jsonKey(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func equal(a, b any) bool { return reflect.DeepEqual(a, b) }
