package resource

import (
	"cmp"
	"slices"
	"sync"
)

// GVR names a served resource: group, version and plural.
type GVR struct{ Group, Version, Plural string }

// Catalog is the set of served resources. It is safe for concurrent use.
type Catalog struct {
	mu sync.RWMutex
	// guarded by mu:
	byGVR      map[GVR]*Resource
	generation uint64        // bumped on every change
	changed    chan struct{} // closed and replaced on every change
}

// NewCatalog returns a catalogue serving rs.
func NewCatalog(rs ...*Resource) *Catalog {
	c := &Catalog{byGVR: map[GVR]*Resource{}, changed: make(chan struct{})}
	for _, r := range rs {
		c.byGVR[gvrOf(r)] = r
	}
	return c
}

func gvrOf(r *Resource) GVR { return GVR{r.Group, r.Version, r.Plural} }

// Get returns the resource served at group/version/plural.
func (c *Catalog) Get(group, version, plural string) (*Resource, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.byGVR[GVR{group, version, plural}]
	return r, ok
}

// All returns every served resource, sorted by group, version and plural.
func (c *Catalog) All() []*Resource {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Resource, 0, len(c.byGVR))
	for _, r := range c.byGVR {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Resource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Plural, b.Plural))
	})
	return out
}

// Replace removes every resource owned by owner and adds rs (which owner
// then owns), in one change.
func (c *Catalog) Replace(owner string, rs []*Resource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, r := range c.byGVR {
		if r.Owner == owner {
			delete(c.byGVR, k)
		}
	}
	for _, r := range rs {
		r.Owner = owner
		c.byGVR[gvrOf(r)] = r
	}
	c.generation++
	close(c.changed)
	c.changed = make(chan struct{})
}

// Generation returns a number that changes whenever the catalogue does, and
// a channel closed at the next change.
func (c *Catalog) Generation() (uint64, <-chan struct{}) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.generation, c.changed
}
