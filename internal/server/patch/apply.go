package patch

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// Apply merges an apply configuration into live (nil to create) as
// server-side apply does and returns the result with its managedFields:
// the configuration's fields become m's Apply entry; fields m applied
// before and no longer does are removed unless another manager owns them;
// changing a field another manager owns is a 409 Conflict naming every
// such field, unless force takes them over.
func (m Manager) Apply(live, config map[string]any, force bool) (map[string]any, error) {
	if mf := metadataOf(config)["managedFields"]; mf != nil {
		return nil, badRequest("metadata.managedFields must be nil")
	}
	if live == nil {
		live = map[string]any{}
	}
	entries, err := decodeEntries(metadataOf(live)["managedFields"])
	if err != nil {
		entries = nil // corrupt: start again, as kube does
	}
	merged := mergeApply(deepCopyMap(live), config, m.Schema)
	entries, err = m.takeChanged(entries, live, merged, force)
	if err != nil {
		return nil, err
	}
	mine := m.entry(OperationApply)
	entries, previous := take(entries, mine.id())
	mine.set = m.only(withoutMetadataNode(fieldSet(m.scoped(config), m.Schema)))
	mine.time = previous.time
	if mine.time == "" || !sameFieldsV1(mine.set, previous.set) {
		mine.time = m.timestamp()
	}
	entries = append(entries, mine)
	removeFields(merged, m.pruned(previous.set, entries), m.Schema)
	removed := m.only(withoutMetadataNode(compare(m.scoped(live), m.scoped(merged), m.Schema).removed))
	for _, e := range entries {
		e.set = difference(e.set, removed)
	}
	setManaged(merged, entries)
	return merged, nil
}

// takeChanged finds the fields merged changes that other managers own:
// a conflict unless force, which takes them from their owners.
func (m Manager) takeChanged(entries []*entry, live, merged map[string]any, force bool) ([]*entry, error) {
	c := compare(m.scoped(live), m.scoped(merged), m.Schema)
	changed := m.only(withoutMetadataNode(union(c.added, c.modified)))
	id := m.entry(OperationApply).id()
	var conflicts []conflict // the first apierror.MaxCauses of them
	total := 0
	for _, e := range entries {
		if e.id() == id {
			continue
		}
		theirs := intersection(e.set, changed)
		if force {
			e.set = difference(e.set, theirs)
			continue
		}
		total += theirs.size()
		for _, p := range theirs.paths(apierror.MaxCauses - len(conflicts)) {
			conflicts = append(conflicts, conflict{e, pathString(p)})
		}
	}
	if total > 0 {
		return nil, conflictError(conflicts, total)
	}
	return entries, nil
}

// pruned is what an apply removes: the fields m applied before (last)
// that no entry, m's new one included, owns. As kube's prune does, a
// declared field counts as a member of a set that owns anything in it, on
// both sides: an Apply entry kubectl converted from a client-side apply's
// Update entry has "data" itself as a member, which the new apply owns
// only through "data.a", and must keep.
func (m Manager) pruned(last *Set, entries []*entry) *Set {
	return withoutMetadataNode(difference(withNamedMembers(last, m.Schema), withNamedMembers(owned(entries), m.Schema)))
}

// withNamedMembers is s with each declared field (a struct's) that has
// members below it made a member, as kube's EnsureNamedFieldsAreMembers.
func withNamedMembers(s *Set, sc *Schema) *Set {
	if s.empty() {
		return nil
	}
	out := &Set{member: s.member, children: make(map[string]*Set, len(s.children))}
	for pe, c := range s.children {
		name, isField := strings.CutPrefix(pe, "f:")
		csc := sc.elem()
		if isField {
			csc = sc.field(name)
		}
		n := withNamedMembers(c, csc)
		if n == nil {
			continue
		}
		n.member = n.member || (isField && sc.isStruct())
		out.children[pe] = n
	}
	return out
}

func owned(entries []*entry) *Set {
	var all *Set
	for _, e := range entries {
		all = union(all, e.set)
	}
	return all
}

// conflict is one field another manager owns.
type conflict struct {
	owner *entry
	path  string
}

// ownerString names a manager as kube's conflict messages do
// (printManager).
func (c conflict) ownerString() string {
	s := fmt.Sprintf("%q", c.owner.manager)
	if c.owner.subresource != "" {
		s += fmt.Sprintf(" with subresource %q", c.owner.subresource)
	}
	if c.owner.operation == OperationUpdate {
		s += " using " + c.owner.apiVersion
	}
	return s
}

// conflictError is kube's 409 for an apply that would change total fields
// other managers own, listing conflicts (all of them, unless too many).
func conflictError(conflicts []conflict, total int) *api.StatusError {
	causes := make([]api.StatusCause, len(conflicts))
	for i, c := range conflicts {
		causes[i] = api.StatusCause{Type: api.CauseTypeFieldManagerConflict, Message: "conflict with " + c.ownerString(), Field: c.path}
	}
	s := api.NewStatus(http.StatusConflict, api.StatusReasonConflict, conflictMessage(conflicts, total))
	s.Details = &api.StatusDetails{Causes: causes}
	return &api.StatusError{Status: s}
}

func conflictMessage(conflicts []conflict, total int) string {
	if total == 1 {
		return fmt.Sprintf("Apply failed with 1 conflict: conflict with %s: %s", conflicts[0].ownerString(), conflicts[0].path)
	}
	byOwner := map[string][]string{}
	for _, c := range conflicts {
		byOwner[c.ownerString()] = append(byOwner[c.ownerString()], c.path)
	}
	var lines []string
	for _, owner := range slices.Sorted(func(yield func(string) bool) {
		for k := range byOwner {
			if !yield(k) {
				return
			}
		}
	}) {
		lines = append(lines, "conflicts with "+owner+":")
		for _, p := range byOwner[owner] {
			lines = append(lines, "- "+p)
		}
	}
	if more := total - len(conflicts); more > 0 {
		lines = append(lines, fmt.Sprintf("...and %d more", more))
	}
	return fmt.Sprintf("Apply failed with %d conflicts: %s", total, strings.Join(lines, "\n"))
}

// mergeApply merges config into live under s as server-side apply does:
// maps merge, null removes, atomic lists are replaced, sets and map lists
// merge item by item keeping both sides' order.
func mergeApply(live, config map[string]any, s *Schema) map[string]any {
	for k, cv := range config {
		if cv == nil {
			delete(live, k)
			continue
		}
		live[k] = mergeApplyValue(live[k], cv, s.field(k))
	}
	return live
}

func mergeApplyValue(lv, cv any, s *Schema) any {
	switch c := cv.(type) {
	case map[string]any:
		lm, isMap := lv.(map[string]any)
		if !isMap {
			lm = map[string]any{}
		}
		return mergeApply(lm, c, s)
	case []any:
		ll, isList := lv.([]any)
		if !isList || !granularItems(ll, s) || !granularItems(c, s) {
			return deepCopyValue(c)
		}
		return mergeItems(ll, c, s)
	}
	return cv
}

// mergeItems merges two granular lists by path element, walking both so
// that each side's relative order is kept.
func mergeItems(lhs, rhs []any, s *Schema) []any {
	lIndex, rIndex := elementIndex(lhs, s), elementIndex(rhs, s)
	used := make([]bool, len(lhs))
	out := make([]any, 0, len(lhs)+len(rhs))
	i, j := 0, 0
	for i < len(lhs) || j < len(rhs) {
		if i < len(lhs) {
			if _, inR := rIndex[elementOf(lhs[i], s)]; used[i] || !inR {
				if !used[i] {
					out = append(out, lhs[i])
				}
				i++
				continue
			}
		}
		if j == len(rhs) {
			break
		}
		item := deepCopyValue(rhs[j])
		if li, inL := lIndex[elementOf(rhs[j], s)]; inL && !used[li] {
			item = mergeApplyValue(lhs[li], rhs[j], s.elem())
			used[li] = true
		}
		out = append(out, item)
		j++
	}
	return out
}

func elementIndex(l []any, s *Schema) map[string]int {
	idx := make(map[string]int, len(l))
	for i, it := range l {
		idx[elementOf(it, s)] = i
	}
	return idx
}

func elementOf(item any, s *Schema) string {
	pe, _ := itemElement(item, s)
	return pe
}

// removeFields removes every member of set from obj, and maps or lists
// left empty by the removal, as kube's typed objects drop empty fields.
func removeFields(obj map[string]any, set *Set, s *Schema) {
	if set == nil {
		return
	}
	for pe, c := range set.children {
		name, ok := strings.CutPrefix(pe, "f:")
		v, has := obj[name]
		if !ok || !has {
			continue
		}
		if c.member {
			delete(obj, name)
			continue
		}
		if out, emptied := removeBelow(v, c, s.field(name)); emptied {
			delete(obj, name)
		} else {
			obj[name] = out
		}
	}
}

// removeBelow removes set's members below v and reports whether that left
// v an empty container.
func removeBelow(v any, set *Set, s *Schema) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		n := len(v)
		removeFields(v, set, s)
		return v, n > 0 && len(v) == 0
	case []any:
		if !granularItems(v, s) {
			return v, false
		}
		out := make([]any, 0, len(v))
		for _, it := range v {
			c := set.child(elementOf(it, s))
			switch {
			case c == nil:
				out = append(out, it)
			case !c.member:
				if kept, emptied := removeBelow(it, c, s.elem()); !emptied {
					out = append(out, kept)
				}
			}
		}
		return out, len(v) > 0 && len(out) == 0
	}
	return v, false
}

// deepCopyMap returns a copy of m sharing nothing with it.
func deepCopyMap(m map[string]any) map[string]any { return api.Object(m).DeepCopy() }

func deepCopyValue(v any) any { return deepCopyMap(map[string]any{"": v})[""] }

// MergeApplyConfiguration is obj with a mutating admission policy's apply
// configuration merged in as kube's ApplyStructuredMergeDiff merges it:
// as server-side apply merges a configuration, without field ownership.
// As kube, a configuration that sets an atomic list is refused: it would
// replace the list whole.
func MergeApplyConfiguration(obj, config map[string]any, s *Schema) (map[string]any, error) {
	if paths := atomicPaths("", config, s); len(paths) > 0 {
		return nil, fmt.Errorf("invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: %s", strings.Join(paths, ", "))
	}
	return mergeApply(deepCopyMap(obj), config, s), nil
}

// atomicPaths are the paths of the atomic lists v sets, in kube's notation
// (.spec.list[0]).
func atomicPaths(path string, v any, s *Schema) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = append(out, atomicPaths(path+"."+k, v[k], s.field(k))...)
		}
	case []any:
		if s.listType() == Atomic {
			out = append(out, path)
		}
		for i, item := range v {
			out = append(out, atomicPaths(fmt.Sprintf("%s[%d]", path, i), item, s.elem())...)
		}
	}
	return out
}
