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
	root := &place{nodes: [3]*Set{{}, {}, {}}}
	root.maps(old, new, s)
	return comparison{nonEmpty(root.nodes[added]), nonEmpty(root.nodes[removed]), nonEmpty(root.nodes[modified])}
}

// nonEmpty is s, or nil if it is empty. A set that compare built has no
// empty node but its root: a node is made only to hold a member.
func nonEmpty(s *Set) *Set {
	if s.empty() {
		return nil
	}
	return s
}

// The sets compare builds, as indexes of place.nodes.
const (
	added = iota
	removed
	modified
)

// place is a path compare walks: its node in each set, made when the first
// member at or under it is marked, so that marking a path costs the nodes
// it makes, not its length (a path 10,000 deep is marked in one step).
type place struct {
	parent *place
	pe     string
	nodes  [3]*Set
}

func (p *place) child(pe string) *place { return &place{parent: p, pe: pe} }

func (p *place) node(set int) *Set {
	if p.nodes[set] == nil {
		p.nodes[set] = p.parent.node(set).ensure(p.pe)
	}
	return p.nodes[set]
}

func (p *place) mark(set int) { p.node(set).member = true }

func (p *place) value(old, new any, hasOld, hasNew bool, s *Schema) {
	om, oldMap := old.(map[string]any)
	nm, newMap := new.(map[string]any)
	ol, oldList := old.([]any)
	nl, newList := new.([]any)
	switch {
	case (oldMap || !hasOld) && (newMap || !hasNew) && (oldMap || newMap):
		p.container(hasOld, hasNew)
		p.maps(om, nm, s)
	case (oldList || !hasOld) && (newList || !hasNew) && (oldList || newList) &&
		granularItems(ol, s) && granularItems(nl, s):
		p.container(hasOld, hasNew)
		p.lists(ol, nl, s)
	default:
		p.leaf(old, new, hasOld, hasNew)
	}
}

func (p *place) container(hasOld, hasNew bool) {
	switch {
	case !hasOld:
		p.mark(added)
	case !hasNew:
		p.mark(removed)
	}
}

func (p *place) leaf(old, new any, hasOld, hasNew bool) {
	switch {
	case !hasOld:
		p.mark(added)
	case !hasNew:
		p.mark(removed)
	case !equal(old, new):
		p.mark(modified)
	}
}

func (p *place) maps(old, new map[string]any, s *Schema) {
	for k, ov := range old {
		nv, has := new[k]
		p.child("f:"+k).value(ov, nv, true, has, s.field(k))
	}
	for k, nv := range new {
		if _, has := old[k]; !has {
			p.child("f:"+k).value(nil, nv, false, true, s.field(k))
		}
	}
}

func (p *place) lists(old, new []any, s *Schema) {
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
		p.child(pe).value(it, nv, true, has, s.elem())
	}
	for _, it := range new {
		if pe, _ := itemElement(it, s); !seen[pe] {
			p.child(pe).value(nil, it, false, true, s.elem())
		}
	}
}
