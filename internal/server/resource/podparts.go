package resource

import (
	"slices"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/validation"
)

func init() {
	pods := GVR{"", "v1", "pods"}
	strategies[pods] = append(strategies[pods], func(r *Resource) {
		r.Parts = map[string]Part{
			// kube's filter names resizePolicy too, but its matcher never
			// merges two wildcards and takes the first: resources alone.
			"resize": {Write: podResize, ValidateUpdate: validation.PodResize, Generation: true,
				Only: [][]string{{"spec", "containers", "*", "resources"}, {"spec", "initContainers", "*", "resources"}}},
			"ephemeralcontainers": {Write: podEphemeralContainers, ValidateUpdate: validation.PodEphemeralContainersUpdate, Generation: true,
				Only: [][]string{{"spec", "ephemeralContainers"}}},
		}
	})
}

// statusMetadata are the metadata fields kube's ResetObjectMetaForStatus
// keeps from the stored object (with identity and creation, which every
// update keeps).
var statusMetadata = []string{"deletionTimestamp", "generation", "labels", "annotations", "finalizers", "ownerReferences"}

// podResize is kube's pod resize strategy's PrepareForUpdate
// (dropNonResizeUpdates, with 1.37's gates): the stored pod with the
// written containers' and init containers' resources and resizePolicy and
// the written pod-level resources (the stored ones when the write has
// none), the stored status and the stored metadata of a status write. When
// containers were added, removed, renamed or reordered it is the written
// pod, which validation refuses. kube's defaulting of pod-level resources
// from the containers' (PodLevelResourcesFixDefaulting) is not replicated.
func podResize(cur, next api.Object) api.Object {
	spec, oldSpec := MapAt(next, "spec"), MapAt(cur, "spec")
	containers, ok := resized(spec["containers"], oldSpec["containers"])
	inits, initsOK := resized(spec["initContainers"], oldSpec["initContainers"])
	if !ok || !initsOK {
		return next
	}
	out := cur.DeepCopy()
	outSpec := MapAt(out, "spec")
	setOrDelete(outSpec, "containers", containers)
	setOrDelete(outSpec, "initContainers", inits)
	if res := spec["resources"]; res != nil {
		outSpec["resources"] = res
	}
	return withStatusMetadata(out, cur, next)
}

// podEphemeralContainers is kube's pod ephemeral containers strategy's
// PrepareForUpdate (dropNonEphemeralContainerUpdates): the stored pod with
// the written ephemeral containers, the stored status and the stored
// metadata of a status write.
func podEphemeralContainers(cur, next api.Object) api.Object {
	out := cur.DeepCopy()
	setOrDelete(MapAt(out, "spec"), "ephemeralContainers", MapAt(next, "spec")["ephemeralContainers"])
	return withStatusMetadata(out, cur, next)
}

// withStatusMetadata sets out's metadata to next's, but for the fields
// kube's ResetObjectMetaForStatus keeps from cur; it returns out.
func withStatusMetadata(out, cur, next api.Object) api.Object {
	md := next.DeepCopy().Metadata()
	for _, f := range statusMetadata {
		setOrDelete(md, f, cur.Metadata()[f])
	}
	out["metadata"] = md
	return out
}

// resized is kube's dropNonResizeUpdatesForContainers: the old containers
// with the new ones' resources and resizePolicy, or false when the new
// ones are not the old ones by name, in order.
func resized(containers, old any) (any, bool) {
	cs, _ := containers.([]any)
	olds, _ := old.([]any)
	if len(cs) != len(olds) {
		return nil, false
	}
	if len(cs) == 0 {
		return containers, true
	}
	out := slices.Clone(olds)
	for i, c := range cs {
		c, _ := c.(map[string]any)
		o, _ := olds[i].(map[string]any)
		if c["name"] != o["name"] {
			return nil, false
		}
		o = api.Object(o).DeepCopy()
		setOrDelete(o, "resources", c["resources"])
		setOrDelete(o, "resizePolicy", c["resizePolicy"])
		out[i] = map[string]any(o)
	}
	return out, true
}

// setOrDelete sets m[k] to v, or deletes it when v is nil.
func setOrDelete(m map[string]any, k string, v any) {
	if v == nil {
		delete(m, k)
	} else {
		m[k] = v
	}
}
