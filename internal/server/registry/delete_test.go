package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// TestGCFinalizers is kube's deletionFinalizersForGarbageCollection case
// by case (store.go, and the namespace storage's shouldHave*Finalizer for
// a namespace's first delete): the options first, then the object's first
// collector finalizer, then the kind's default; the object's own order
// when nothing changes.
func TestGCFinalizers(t *testing.T) {
	configMaps := &resource.Resource{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true}
	namespaces := &resource.Resource{Version: "v1", Plural: "namespaces", Kind: "Namespace"}
	coreEvents := &resource.Resource{Version: "v1", Plural: "events", Kind: "Event", Namespaced: true}
	eventsV1 := &resource.Resource{Group: "events.k8s.io", Version: "v1", Plural: "events", Kind: "Event", Namespaced: true, Storage: coreEvents}
	yes, no := true, false
	for _, tc := range []struct {
		name     string
		res      *resource.Resource
		have     []any
		deleting bool
		opts     DeleteOptions
		want     []any
		changed  bool
	}{
		{"nothing", configMaps, nil, false, DeleteOptions{}, nil, false},
		{"foreground", configMaps, nil, false, DeleteOptions{Propagation: "Foreground"}, []any{"foregroundDeletion"}, true},
		{"orphanDependents true", configMaps, nil, false, DeleteOptions{OrphanDependents: &yes}, []any{"orphan"}, true},
		{"orphanDependents false drops orphan", configMaps, []any{"orphan"}, false, DeleteOptions{OrphanDependents: &no}, []any{}, true},
		{"kept, in order", configMaps, []any{"orphan", "a/b"}, false, DeleteOptions{}, []any{"orphan", "a/b"}, false},
		{"the first of both wins", configMaps, []any{"foregroundDeletion", "a/b", "orphan"}, false, DeleteOptions{}, []any{"a/b", "foregroundDeletion"}, true},
		{"duplicates are one", configMaps, []any{"orphan", "orphan"}, false, DeleteOptions{Propagation: "Orphan"}, []any{"orphan", "orphan"}, false},
		{"policy replaces", configMaps, []any{"orphan", "a/b"}, false, DeleteOptions{Propagation: "Foreground"}, []any{"a/b", "foregroundDeletion"}, true},
		{"namespace: orphanDependents false is foreground", namespaces, nil, false, DeleteOptions{OrphanDependents: &no}, []any{"foregroundDeletion"}, true},
		{"namespace being deleted: generic", namespaces, []any{"a/b"}, true, DeleteOptions{OrphanDependents: &no}, []any{"a/b"}, false},
		{"events: unsupported", coreEvents, []any{"orphan"}, false, DeleteOptions{Propagation: "Foreground"}, []any{}, true},
		{"events.k8s.io: unsupported", eventsV1, nil, false, DeleteOptions{Propagation: "Orphan"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := api.Object{"metadata": map[string]any{"name": "a"}}
			if tc.have != nil {
				obj.SetMeta("finalizers", tc.have)
			}
			if tc.deleting {
				obj.SetMeta("deletionTimestamp", "2026-01-01T00:00:00Z")
			}
			got, changed := gcFinalizers(tc.res, obj, tc.opts)
			if d := cmp.Diff(tc.want, got); d != "" || changed != tc.changed {
				t.Errorf("changed %v, want %v; finalizers (-want +got):\n%s", changed, tc.changed, d)
			}
		})
	}
}
