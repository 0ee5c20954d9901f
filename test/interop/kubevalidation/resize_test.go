package kubevalidation

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/registry/core/pod"

	"github.com/listwatch/listwatch/client/api"
)

var podKind = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

// resizedPod is a created pod: a Burstable app container, a Guaranteed
// sidecar and a plain init container, stored with its QoS class.
func resizedPod() map[string]any {
	res := func(req, lim map[string]any) map[string]any {
		return map[string]any{"requests": req, "limits": lim}
	}
	cpuMem := func(cpu, mem string) map[string]any { return map[string]any{"cpu": cpu, "memory": mem} }
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default", "labels": map[string]any{"app": "web"}, "generation": 1, "resourceVersion": "7"},
		"spec": map[string]any{
			"containers": []any{
				map[string]any{"name": "app", "image": "nginx", "resources": res(cpuMem("100m", "64Mi"), map[string]any{"memory": "128Mi"})},
				map[string]any{"name": "log", "image": "busybox", "resources": res(cpuMem("50m", "32Mi"), cpuMem("50m", "32Mi"))},
			},
			"initContainers": []any{
				map[string]any{"name": "proxy", "image": "envoy", "restartPolicy": "Always", "resources": res(cpuMem("10m", "16Mi"), nil)},
				map[string]any{"name": "setup", "image": "busybox", "resources": res(cpuMem("10m", "16Mi"), nil)},
			},
		},
		"status": map[string]any{"phase": "Pending", "qosClass": "Burstable"},
	}
}

// guaranteed makes the pod Guaranteed: its app container's limits equal
// to its requests, no init containers.
func guaranteed(o map[string]any) {
	delete(spec(o), "initContainers")
	setResource("containers", 0, "limits", "cpu", "100m")(o)
	setResource("containers", 0, "limits", "memory", "64Mi")(o)
	at(o, "status")["qosClass"] = "Guaranteed"
}

// ctr is the container at index i of the pod spec's list f.
func ctr(o map[string]any, f string, i int) map[string]any {
	return list(spec(o), f)[i].(map[string]any)
}

func setResource(f string, i int, kind, name string, v any) func(map[string]any) {
	return func(o map[string]any) {
		m := at(ctr(o, f, i), "resources", kind)
		if v == nil {
			delete(m, name)
		} else {
			m[name] = v
		}
	}
}

// resizes are writes through pods/resize: change applied to the stored
// pod (made from resizedPod by set).
var resizes = map[string]update{
	"cpu request raised":   {change: setResource("containers", 0, "requests", "cpu", "200m")},
	"memory limit lowered": {change: setResource("containers", 0, "limits", "memory", "96Mi")},
	"guaranteed stays": {change: func(o map[string]any) {
		setResource("containers", 1, "requests", "cpu", "80m")(o)
		setResource("containers", 1, "limits", "cpu", "80m")(o)
	}},
	"sidecar resized":        {change: setResource("initContainers", 0, "requests", "cpu", "20m")},
	"init container resized": {change: setResource("initContainers", 1, "requests", "memory", "32Mi")},
	"image ignored":          {change: func(o map[string]any) { ctr(o, "containers", 0)["image"] = "nginx:2" }},
	"label ignored":          {change: func(o map[string]any) { at(o, "metadata", "labels")["app"] = "other" }},
	"status ignored":         {change: func(o map[string]any) { at(o, "status")["phase"] = "Running" }},
	"resize policy": {change: func(o map[string]any) {
		ctr(o, "containers", 0)["resizePolicy"] = []any{map[string]any{"resourceName": "cpu", "restartPolicy": "RestartContainer"}}
	}, refused: true},
	"request removed":         {change: setResource("containers", 0, "requests", "cpu", nil), refused: true},
	"limit removed":           {change: setResource("containers", 0, "limits", "memory", nil), refused: true},
	"request over limit":      {change: setResource("containers", 0, "requests", "memory", "256Mi"), refused: true},
	"storage changed":         {change: setResource("containers", 0, "requests", "ephemeral-storage", "1Gi"), refused: true},
	"init storage changed":    {change: setResource("initContainers", 1, "requests", "ephemeral-storage", "1Gi"), refused: true},
	"guaranteed to burstable": {set: guaranteed, change: setResource("containers", 1, "limits", "cpu", "100m"), refused: true},
	"guaranteed stays so": {set: guaranteed, change: func(o map[string]any) {
		setResource("containers", 1, "requests", "cpu", "80m")(o)
		setResource("containers", 1, "limits", "cpu", "80m")(o)
	}},
	"container added": {change: func(o map[string]any) {
		spec(o)["containers"] = append(list(spec(o), "containers"), map[string]any{"name": "more", "image": "x"})
	}, refused: true},
	"containers swapped":     {change: func(o map[string]any) { cs := list(spec(o), "containers"); cs[0], cs[1] = cs[1], cs[0] }, refused: true},
	"init container renamed": {change: func(o map[string]any) { ctr(o, "initContainers", 1)["name"] = "prepare" }, refused: true},
	"static pod": {
		set:    func(o map[string]any) { at(o, "metadata", "annotations")["kubernetes.io/config.mirror"] = "x" },
		change: setResource("containers", 0, "requests", "cpu", "200m"), refused: true,
	},
	"windows pod": {
		set: func(o map[string]any) {
			spec(o)["os"] = map[string]any{"name": "windows"}
			delete(ctr(o, "initContainers", 0), "restartPolicy")
		},
		change: setResource("containers", 0, "requests", "cpu", "200m"), refused: true,
	},
	"node without resize": {
		set: func(o map[string]any) {
			at(o, "status")["containerStatuses"] = []any{map[string]any{"name": "app", "image": "nginx", "imageID": "", "ready": true, "restartCount": 0, "state": map[string]any{"running": map[string]any{"startedAt": "2026-01-01T00:00:00Z"}}}}
		},
		change: setResource("containers", 0, "requests", "cpu", "200m"), refused: true,
	},
	"node with resize": {
		set: func(o map[string]any) {
			at(o, "status")["containerStatuses"] = []any{map[string]any{"name": "app", "image": "nginx", "imageID": "", "ready": true, "restartCount": 0, "state": map[string]any{"running": map[string]any{"startedAt": "2026-01-01T00:00:00Z"}}, "resources": map[string]any{}}}
		},
		change: setResource("containers", 0, "requests", "cpu", "200m"),
	},
	"pod-level cpu raised": {
		set: func(o map[string]any) {
			spec(o)["resources"] = map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}, "limits": map[string]any{"cpu": "2", "memory": "2Gi"}}
		},
		change: func(o map[string]any) { at(o, "spec", "resources", "limits")["cpu"] = "3" },
	},
	"pod-level kept when absent": {
		set: func(o map[string]any) {
			spec(o)["resources"] = map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}, "limits": map[string]any{"cpu": "2", "memory": "2Gi"}}
		},
		change: func(o map[string]any) {
			delete(spec(o), "resources")
			setResource("containers", 0, "requests", "cpu", "200m")(o)
		},
	},
	"pod-level limit removed": {
		set: func(o map[string]any) {
			spec(o)["resources"] = map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}, "limits": map[string]any{"cpu": "2", "memory": "2Gi"}}
		},
		change:  func(o map[string]any) { delete(at(o, "spec", "resources", "limits"), "cpu") },
		refused: true,
	},
}

// TestPodResize writes each of resizes through pods/resize both ways:
// kube's ResizeStrategy (PrepareForUpdate, ValidateUpdate) and our part
// (Write, the pod's Prepare, ValidateUpdate). The causes must be the same
// set and, when accepted, the pods to store the same spec, status and
// labels and annotations, and the generation bumped alike.
func TestPodResize(t *testing.T) {
	r := ours["/v1/pods"]
	part := r.Parts["resize"]
	if part.Write == nil {
		t.Fatal("pods have no resize part")
	}
	for name, u := range resizes {
		kube := func(t *testing.T, _ schema.GroupVersionKind, js, old []byte) []cause {
			obj, was := kubeInternal(t, podKind, js), kubeInternal(t, podKind, old)
			pod.ResizeStrategy.PrepareForUpdate(t.Context(), obj, was)
			cs := kubeErrors(pod.ResizeStrategy.ValidateUpdate(t.Context(), obj, was))
			if len(cs) == 0 {
				v1, err := legacyscheme.Scheme.ConvertToVersion(obj, schema.GroupVersion{Version: "v1"})
				if err != nil {
					t.Fatal(err)
				}
				ourObj, ourWas := ourObject(t, r, js), ourObject(t, r, old)
				stored := part.Write(ourWas, ourObj)
				r.Prepare(stored, ourWas)
				compareStored(t, v1, stored, ourWas)
			}
			return cs
		}
		ourCauses := func(t *testing.T, _ schema.GroupVersionKind, js, old []byte) []cause {
			obj, was := ourObject(t, r, js), ourObject(t, r, old)
			obj = part.Write(was, obj)
			r.Prepare(obj, was)
			return ourErrors(part.ValidateUpdate(t.Context(), obj, was))
		}
		checkUpdateBy(t, name, podKind, resizedPod(), u, kube, ourCauses)
	}
}

// compareStored fails unless kube's prepared pod and ours agree on what
// a resize stores: spec, status, labels and annotations, and the
// generation (which the server bumps when the spec changed).
func compareStored(t *testing.T, kube any, ours, old api.Object) {
	t.Helper()
	var k map[string]any
	b, err := json.Marshal(kube)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil {
		t.Fatal(err)
	}
	o, w := deepCopy(map[string]any(ours)).(map[string]any), deepCopy(map[string]any(old)).(map[string]any)
	gen, _ := at(w, "metadata")["generation"].(float64)
	if !cmp.Equal(o["spec"], w["spec"]) {
		gen++ // the server's bump
	}
	view := func(m map[string]any, generation any) map[string]any {
		md := at(m, "metadata")
		return map[string]any{"spec": m["spec"], "status": m["status"], "labels": md["labels"], "annotations": md["annotations"], "generation": generation}
	}
	if diff := cmp.Diff(view(k, at(k, "metadata")["generation"]), view(o, gen)); diff != "" {
		t.Errorf("stored pod (-kube +ours):\n%s", diff)
	}
}
