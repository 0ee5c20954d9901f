package registry

import (
	"strconv"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// TestFinalizersLinear: a stored object may hold 150,000 finalizers (1.5
// MB). Comparing them, on an update of an object being deleted and on a
// DELETE, must take time linear in their number, as kube's sets do:
// quadratic, 50,000 cost 32 s of CPU, 100,000 two minutes, per request.
func TestFinalizersLinear(t *testing.T) {
	fins := make([]any, 50_000)
	for i := range fins {
		fins[i] = "f" + strconv.Itoa(i)
	}
	old := api.Object{"metadata": map[string]any{"name": "x", "finalizers": fins, "deletionTimestamp": "2026-01-01T00:00:00Z"}}
	obj := old.DeepCopy()
	configMaps := &resource.Resource{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true}
	start := time.Now()
	if causes := validateNoNewFinalizers(obj, old); causes != nil {
		t.Errorf("no new finalizers: %v", causes)
	}
	if _, changed := gcFinalizers(configMaps, old, DeleteOptions{}); changed {
		t.Error("a delete without a policy changed the finalizers")
	}
	// Linear, both take milliseconds (a few hundred under -race).
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("comparing %d finalizers took %v", len(fins), d)
	}
}
