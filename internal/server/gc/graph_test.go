package gc

import (
	"strconv"
	"testing"
	"time"
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
