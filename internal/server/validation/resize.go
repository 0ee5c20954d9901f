package validation

import (
	"cmp"
	"context"
	"fmt"

	"github.com/listwatch/listwatch/client/api"
)

// mirrorPod is kube's MirrorPodAnnotationKey, which marks a static pod.
const mirrorPod = "kubernetes.io/config.mirror"

// PodResize is kube's ValidatePodResize, the rules of a write through a
// pod's resize subresource (with 1.37's gates: resize of pod-level
// resources and of init containers on, of memory-backed volumes off): the
// pod's spec, then only the cpu and memory of its containers, init
// containers and pod-level resources may change, none removed, and the QoS
// class stays. The rule that pod-level resources cover DRA node-allocatable
// claims is not replicated (it needs status the kubelet writes).
func PodResize(_ context.Context, o, old api.Object) []api.StatusCause {
	if _, ok := object(old.Metadata(), "annotations")[mirrorPod]; ok {
		return forbiddenRoot("static pods cannot be resized")
	}
	spec, oldSpec := object(o, "spec"), object(old, "spec")
	if str(object(oldSpec, "os"), "name") == "windows" {
		return forbiddenRoot("windows pods cannot be resized")
	}
	c := causes(pod(o))
	p := path("spec")
	if oldQOS := str(object(old, "status"), "qosClass"); cmp.Or(oldQOS, PodQOS(oldSpec)) != PodQOS(spec) {
		c.invalid(p, jsonValue{str(object(o, "status"), "qosClass")}, "Pod QOS Class may not change as a result of resizing")
	}
	if !resizeSupported(old) {
		c.forbidden(p, "Pod running on node without support for resize")
	}
	munged := shallowCopy(spec)
	if podLevelResourcesSet(spec) || podLevelResourcesSet(oldSpec) {
		c.podLevelResize(spec, oldSpec, munged)
	}
	if c.containerOrder(spec, oldSpec) {
		return c
	}
	for _, f := range []string{"initContainers", "containers"} {
		for i, ctr := range list(oldSpec, f) {
			res, oldRes := object(asObject(list(spec, f)[i]), "resources"), object(asObject(ctr), "resources")
			at := p.child(f).index(i).child("resources")
			if removed(object(res, "requests"), object(oldRes, "requests")) {
				c.forbidden(at.child("requests"), "resource requests cannot be removed")
			}
			if removed(object(res, "limits"), object(oldRes, "limits")) {
				c.forbidden(at.child("limits"), "resource limits cannot be removed")
			}
		}
	}
	containers, oldContainers := list(spec, "containers"), list(oldSpec, "containers")
	munged["containers"] = withOldCPUMemory(containers, oldContainers)
	for i, ctr := range munged["containers"].([]any) {
		if !equal(ctr, oldContainers[i]) {
			c.forbidden(p, "only cpu and memory resources are mutable")
		}
	}
	inits, oldInits := list(spec, "initContainers"), list(oldSpec, "initContainers")
	munged["initContainers"] = withOldCPUMemory(inits, oldInits)
	for i, ctr := range munged["initContainers"].([]any) {
		at := p.child("initContainers").index(i)
		if !equal(ctr, oldInits[i]) {
			c.forbidden(at, "only cpu and memory resources for init or sidecar containers are mutable")
		}
		ctr := asObject(ctr)
		if !equal(inits[i], oldInits[i]) && str(ctr, "restartPolicy") != "Always" {
			for _, rp := range list(ctr, "resizePolicy") {
				if str(asObject(rp), "restartPolicy") == "RestartContainer" {
					c.forbidden(at, "non-sidecar init containers with a resize policy of RestartContainer cannot be resized")
				}
			}
		}
	}
	if !equal(spec["volumes"], oldSpec["volumes"]) {
		c.forbidden("spec.volumes", "volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled")
	}
	if len(c) == 0 && !equal(munged, oldSpec) {
		c.forbidden(p, "only cpu and memory resources are mutable")
	}
	return c
}

// forbiddenRoot is a Forbidden at kube's field.NewPath(""), which it
// names "[]".
func forbiddenRoot(detail string) []api.StatusCause {
	var c causes
	c.forbidden("[]", detail)
	return c
}

// resizeSupported is kube's isPodResizeRequestSupported: the first running
// container's status reports its resources (its node can resize), or none
// runs.
func resizeSupported(pod api.Object) bool {
	for _, s := range list(object(pod, "status"), "containerStatuses") {
		s, _ := s.(map[string]any)
		if object(object(s, "state"), "running") != nil {
			return object(s, "resources") != nil
		}
	}
	return true
}

// podLevelResourcesSet is ValidatePodResize's isPodLevelResourcesSet: any
// pod-level request or limit.
func podLevelResourcesSet(spec map[string]any) bool {
	res := object(spec, "resources")
	return len(object(res, "requests"))+len(object(res, "limits")) > 0
}

// podLevelResize is kube's validatePodLevelResourcesResize: pod-level
// resources, requests and limits are not removed, and only their cpu and
// memory change; munged (a copy of the new spec) gets the old cpu and
// memory.
func (c *causes) podLevelResize(spec, oldSpec, munged map[string]any) {
	p := path("spec")
	res, hasRes := spec["resources"].(map[string]any)
	oldRes, hadRes := oldSpec["resources"].(map[string]any)
	if hadRes && !hasRes {
		c.forbidden(p.child("resources"), "pod-level resources cannot be removed")
		return
	}
	if hadRes {
		if removed(object(res, "requests"), object(oldRes, "requests")) {
			c.forbidden(p.child("resources", "requests"), "pod-level resource requests cannot be removed")
		}
		if removed(object(res, "limits"), object(oldRes, "limits")) {
			c.forbidden(p.child("resources", "limits"), "pod-level resource limits cannot be removed")
		}
	}
	var m map[string]any
	if hasRes {
		m = withOldRequirements(res, oldRes)
	}
	if !hadRes && len(object(m, "requests")) == 0 && len(object(m, "limits")) == 0 && len(list(m, "claims")) == 0 {
		m = nil
	}
	munged["resources"] = m
	if !equal(m, oldSpec["resources"]) {
		c.forbidden(p, "only cpu and memory resources are mutable at pod-level")
	}
}

// containerOrder is kube's validatePodResizeContainerOrdering: containers
// are not added, removed, renamed or reordered; it says whether they were.
func (c *causes) containerOrder(spec, oldSpec map[string]any) bool {
	n := len(*c)
	for _, f := range []string{"containers", "initContainers"} {
		cs, oldCs := list(spec, f), list(oldSpec, f)
		if len(cs) != len(oldCs) {
			c.forbidden(path("spec").child(f), f+" may not be added or removed on resize")
			continue
		}
		for i, old := range oldCs {
			if str(asObject(cs[i]), "name") != str(asObject(old), "name") {
				c.forbidden(path("spec").child(f).index(i).child("name"), f+" may not be renamed or reordered on resize")
			}
		}
	}
	return len(*c) > n
}

// withOldCPUMemory is containers, each with the cpu and memory of the
// old container at its index (kube's dropCPUMemoryResourcesFromContainer).
func withOldCPUMemory(containers, old []any) []any {
	out := make([]any, len(containers))
	for i, ctr := range containers {
		ctr := shallowCopy(asObject(ctr))
		ctr["resources"] = withOldRequirements(object(ctr, "resources"), object(asObject(old[i]), "resources"))
		out[i] = ctr
	}
	return out
}

// withOldRequirements is requirements res with the cpu and memory
// requests and limits of old.
func withOldRequirements(res, old map[string]any) map[string]any {
	out := map[string]any{"claims": res["claims"]}
	for _, f := range []string{"requests", "limits"} {
		out[f] = withOldCPUMemoryList(object(res, f), object(old, f))
	}
	return out
}

// withOldCPUMemoryList is kube's dropCPUMemoryUpdates: list with cpu and
// memory as in old.
func withOldCPUMemoryList(l, old map[string]any) map[string]any {
	if l == nil && old == nil {
		return nil
	}
	out := shallowCopy(l)
	for _, name := range []string{"cpu", "memory"} {
		if v, ok := old[name]; ok {
			out[name] = v
		} else {
			delete(out, name)
		}
	}
	return out
}

// removed is kube's resourcesRemoved: a resource of old is not in l.
func removed(l, old map[string]any) bool {
	for name := range old {
		if _, ok := l[name]; !ok {
			return true
		}
	}
	return false
}

// PodEphemeralContainersUpdate is kube's
// ValidatePodEphemeralContainersUpdate, the rules of a write through a
// pod's ephemeralcontainers subresource: the pod's spec, and each stored
// ephemeral container still there unchanged (found by name, as a patch
// may reorder them). kube follows "may not be changed" with a go-cmp diff
// of its Go types; this follows it with the JSON paths that changed.
func PodEphemeralContainersUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	if _, ok := object(old.Metadata(), "annotations")[mirrorPod]; ok {
		return forbiddenRoot("static pods do not support ephemeral containers")
	}
	c := causes(pod(o))
	p := path("spec.ephemeralContainers")
	byName := map[string]any{}
	for _, ctr := range list(object(o, "spec"), "ephemeralContainers") {
		byName[str(asObject(ctr), "name")] = ctr
	}
	for _, was := range list(object(old, "spec"), "ephemeralContainers") {
		name := str(asObject(was), "name")
		switch now, ok := byName[name]; {
		case !ok:
			c.forbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", name))
		case !equal(was, now):
			c.forbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be changed\n", name)+diff(p, was, now))
		}
	}
	return c
}
