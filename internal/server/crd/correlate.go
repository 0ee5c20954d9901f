package crd

// correlated pairs a value of an updated object with the stored object's
// value at the same place, as kube's CorrelatedObject does for ratcheting:
// fields by name where the schema knows them, list-type map items by their
// keys, nothing in other lists. A nil *correlated is a value that has none.
type correlated struct {
	s      *Schema
	v, old any
	same   *bool               // unchanged(), once asked
	prev   func(x any) *any    // old items by key, for a list-type map
	kids   map[any]*correlated // by field name or item index
}

// key returns the correlated value of field name, or nil.
func (c *correlated) key(name string) *correlated {
	if c == nil {
		return nil
	}
	if k, ok := c.kids[name]; ok {
		return k
	}
	m, _ := c.v.(map[string]any)
	om, _ := c.old.(map[string]any)
	v, ok := m[name]
	o, oldOK := om[name]
	child := c.s.field(name)
	if !ok || !oldOK || child == nil {
		return nil
	}
	return c.child(name, &correlated{s: child, v: v, old: o})
}

// index returns the correlated value of item i, or nil.
func (c *correlated) index(i int) *correlated {
	if c == nil {
		return nil
	}
	if k, ok := c.kids[i]; ok {
		return k
	}
	l, _ := c.v.([]any)
	if i >= len(l) || c.s.Items == nil {
		return nil
	}
	if c.prev == nil {
		c.prev = c.s.oldItems(&c.old)
	}
	o := c.prev(l[i])
	if o == nil {
		return nil
	}
	return c.child(i, &correlated{s: c.s.Items, v: l[i], old: *o})
}

func (c *correlated) child(k any, kid *correlated) *correlated {
	if c.kids == nil {
		c.kids = map[any]*correlated{}
	}
	c.kids[k] = kid
	return kid
}

// unchanged is kube's CachedDeepEqual: objects are equal when every field
// correlates and is equal, list-type maps when every item does, other
// lists and scalars when they are the same value (sameValue). A nil c is
// not equal.
func (c *correlated) unchanged() bool {
	if c == nil {
		return false
	}
	if c.same == nil {
		same := c.compare()
		c.same = &same
	}
	return *c.same
}

func (c *correlated) compare() bool {
	if c.v == nil || c.old == nil {
		return c.v == nil && c.old == nil
	}
	switch v := c.v.(type) {
	case map[string]any:
		o, ok := c.old.(map[string]any)
		if !ok || len(o) != len(v) {
			return false
		}
		for k := range v {
			if !c.key(k).unchanged() {
				return false
			}
		}
		return true
	case []any:
		o, ok := c.old.([]any)
		if !ok || len(o) != len(v) {
			return false
		}
		if c.s.ListType != "map" || c.s.Items == nil {
			return sameValue(v, o)
		}
		for i := range v {
			if !c.index(i).unchanged() {
				return false
			}
		}
		return true
	}
	switch c.old.(type) {
	case map[string]any, []any:
		return false
	}
	return sameValue(c.v, c.old)
}

// ratchet is where a node stands for kube's ratcheting of rules: its own
// correlation, or, where it has none, its nearest ancestor's.
type ratchet struct{ cur, parent *correlated }

func (r ratchet) key(name string) ratchet {
	switch {
	case r.cur == nil:
		return r
	case r.parent == nil && (name == "apiVersion" || name == "kind"):
		// Both sides are converted to the served version: kube does not
		// ratchet on them.
		return ratchet{}
	}
	return ratchet{cur: r.cur.key(name), parent: r.cur}
}

func (r ratchet) index(i int) ratchet {
	if r.cur == nil {
		return r
	}
	return ratchet{cur: r.cur.index(i), parent: r.cur}
}

// holds reports whether a failed rule that does not read oldSelf is let
// pass: the node, or the nearest ancestor that correlates, is unchanged.
func (r ratchet) holds() bool {
	if r.cur != nil {
		return r.cur.unchanged()
	}
	return r.parent.unchanged()
}

// field returns the schema of property name of an object of s, or nil.
func (s *Schema) field(name string) *Schema {
	if p := s.Properties[name]; p != nil {
		return p
	}
	if s.AdditionalProperties != nil {
		return s.AdditionalProperties.Schema
	}
	return nil
}
