package crd

import (
	"slices"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// TestBuiltinSchemasPrune checks that every built-in kind's schema (but the
// recursive CustomResourceDefinition's) inlines and prunes what kube's typed
// decoder drops, and keeps what it knows.
func TestBuiltinSchemasPrune(t *testing.T) {
	for _, r := range resource.Builtins() {
		if r.Group == Group || r.CreateOnly {
			continue
		}
		s, err := BuiltinSchema(r.Definition, kubespec.Schema)
		if err != nil {
			t.Fatalf("%s: %v", r.Kind, err)
		}
		obj := api.Object{
			"apiVersion": r.APIVersion(), "kind": r.Kind, "bogus": 1,
			"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "b"}, "bogusMeta": true},
		}
		unknown := s.PruneAndDefault(obj)
		if !slices.Equal(unknown, []string{"bogus", "metadata.bogusMeta"}) || obj.Labels()["a"] != "b" {
			t.Errorf("%s: pruned %v, left %v", r.Kind, unknown, obj)
		}
	}
	cm := api.Object{"data": map[string]any{"k": "v"}, "binaryData": map[string]any{"b": "AA=="}, "immutable": true}
	rs := resource.Builtins()
	PruneBuiltins(rs)
	i := slices.IndexFunc(rs, func(r *resource.Resource) bool { return r.Kind == "ConfigMap" })
	s := rs[i]
	if unknown := s.PruneAndDefault(cm); len(unknown) != 0 {
		t.Errorf("a valid ConfigMap lost %v", unknown)
	}
}
