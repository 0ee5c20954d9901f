package gc

import (
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/metrics"
)

// TestReferencesDiffsLinear: a stored object may hold 20,000
// ownerReferences (1.5 MB); the graph builder, one goroutine for every
// resource, compares them on each update of the object, so it must take
// time linear in their number, as kube's map by uid does: quadratic, an
// update of such an object held the builder for seconds.
func TestReferencesDiffsLinear(t *testing.T) {
	refs := make([]ownerRef, 20_000)
	for i := range refs {
		refs[i] = ownerRef{APIVersion: "v1", Kind: "ConfigMap", Name: strconv.Itoa(i), UID: strconv.Itoa(i)}
	}
	start := time.Now()
	for range 10 {
		if added, removed, unblocked := referencesDiffs(refs, refs); added != nil || removed != nil || unblocked != nil {
			t.Fatalf("same references: added %d, removed %d, unblocked %d", len(added), len(removed), len(unblocked))
		}
	}
	// Linear, ten take milliseconds (tens under -race).
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("comparing %d references ten times took %v", len(refs), d)
	}
}

// TestVirtualOwnersLeaveWithTheirDependents: the virtual node made for an
// owner reference goes once no object refers to it, whether the reference
// was removed or its object deleted, so that references rewritten at will
// (to kinds never served, never to be found) do not grow the graph.
func TestVirtualOwnersLeaveWithTheirDependents(t *testing.T) {
	g := &graph{nodes: map[string]*node{}, absent: newAbsentOwners(10)}
	q := newQueue[*node](metrics.New().Workqueues(), "test")
	g.toDelete, g.toOrphan = q, q
	dep := identity{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "dep", UID: "d"}
	widget := func(uid string) []ownerRef {
		return []ownerRef{{APIVersion: "example.com/v1", Kind: "Widget", Name: uid, UID: uid}}
	}
	g.apply(&event{typ: upsert, id: dep, owners: widget("w1")})
	g.apply(&event{typ: upsert, id: dep, owners: widget("w2")})
	if _, ok := g.nodes["w1"]; ok {
		t.Error("an owner no longer referred to stayed")
	}
	if n, ok := g.nodes["w2"]; !ok || !n.virtual {
		t.Fatalf("the owner referred to: %v, want a virtual node", n)
	}
	g.apply(&event{typ: deleted, id: dep})
	if len(g.nodes) != 0 {
		t.Errorf("nodes left after the only object was deleted: %v", slices.Collect(maps.Keys(g.nodes)))
	}
}
