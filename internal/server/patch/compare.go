package patch

// comparison is what changed between two versions of an object, as sets
// of fields (kube's typed.Comparison).
type comparison struct {
	added, removed, modified *Set
}

// compare walks old and new together: a leaf (scalar, atomic list, or a
// value whose kind changed) is added, removed or modified; a map or
// granular list is added or removed as a whole and then walked.
func compare(old, new map[string]any, s *Schema) comparison {
	c := comparison{&Set{}, &Set{}, &Set{}}
	c.maps(nil, old, new, s)
	return comparison{nonEmpty(c.added), nonEmpty(c.removed), nonEmpty(c.modified)}
}

// nonEmpty is s, or nil if it is empty. A set that compare built has no
// empty node but its root: insert marks the end of every path it makes.
func nonEmpty(s *Set) *Set {
	if s.empty() {
		return nil
	}
	return s
}

func (c comparison) value(path []string, old, new any, hasOld, hasNew bool, s *Schema) {
	om, oldMap := old.(map[string]any)
	nm, newMap := new.(map[string]any)
	ol, oldList := old.([]any)
	nl, newList := new.([]any)
	switch {
	case (oldMap || !hasOld) && (newMap || !hasNew) && (oldMap || newMap):
		c.container(path, hasOld, hasNew)
		c.maps(path, om, nm, s)
	case (oldList || !hasOld) && (newList || !hasNew) && (oldList || newList) &&
		granularItems(ol, s) && granularItems(nl, s):
		c.container(path, hasOld, hasNew)
		c.lists(path, ol, nl, s)
	default:
		c.leaf(path, old, new, hasOld, hasNew)
	}
}

func (c comparison) container(path []string, hasOld, hasNew bool) {
	switch {
	case !hasOld:
		c.added.insert(path...)
	case !hasNew:
		c.removed.insert(path...)
	}
}

func (c comparison) leaf(path []string, old, new any, hasOld, hasNew bool) {
	switch {
	case !hasOld:
		c.added.insert(path...)
	case !hasNew:
		c.removed.insert(path...)
	case !equal(old, new):
		c.modified.insert(path...)
	}
}

func (c comparison) maps(path []string, old, new map[string]any, s *Schema) {
	for k, ov := range old {
		nv, has := new[k]
		c.value(append(path, "f:"+k), ov, nv, true, has, s.field(k))
	}
	for k, nv := range new {
		if _, has := old[k]; !has {
			c.value(append(path, "f:"+k), nil, nv, false, true, s.field(k))
		}
	}
}

func (c comparison) lists(path []string, old, new []any, s *Schema) {
	byElement := map[string]any{}
	for _, it := range new {
		pe, _ := itemElement(it, s)
		byElement[pe] = it
	}
	seen := map[string]bool{}
	for _, it := range old {
		pe, _ := itemElement(it, s)
		seen[pe] = true
		nv, has := byElement[pe]
		c.value(append(path, pe), it, nv, true, has, s.elem())
	}
	for _, it := range new {
		if pe, _ := itemElement(it, s); !seen[pe] {
			c.value(append(path, pe), nil, it, false, true, s.elem())
		}
	}
}
