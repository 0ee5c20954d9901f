package kubevalidation

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	for name, u := range resizes {
		kube, ours := partCauses(t, "resize", pod.ResizeStrategy)
		checkUpdateBy(t, name, podKind, resizedPod(), u, kube, ours)
	}
}

// TestPodEphemeralContainers writes each of ephemeralWrites through
// pods/ephemeralcontainers both ways, as TestPodResize does.
func TestPodEphemeralContainers(t *testing.T) {
	for name, u := range ephemeralWrites {
		kube, ours := partCauses(t, "ephemeralcontainers", pod.EphemeralContainersStrategy)
		checkUpdateBy(t, name, podKind, resizedPod(), u, kube, ours)
	}
}

// partCauses are kube's and our causes of a write through the pods
// subresource sub, whose kube strategy is strategy; kube's, when it
// accepts, fails the test unless both store the same pod (compareStored).
func partCauses(t *testing.T, sub string, strategy interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}) (kubeSide, ourSide updateCauses) {
	r := ours["/v1/pods"]
	part := r.Parts[sub]
	if part.Write == nil {
		t.Fatalf("pods have no %s part", sub)
	}
	write := func(t *testing.T, js, old []byte) (obj, was api.Object) {
		obj, was = ourObject(t, r, js), ourObject(t, r, old)
		obj = part.Write(was, obj)
		r.Prepare(obj, was)
		return obj, was
	}
	kubeSide = func(t *testing.T, _ schema.GroupVersionKind, js, old []byte) []cause {
		obj, was := kubeInternal(t, podKind, js), kubeInternal(t, podKind, old)
		strategy.PrepareForUpdate(t.Context(), obj, was)
		cs := kubeErrors(strategy.ValidateUpdate(t.Context(), obj, was))
		if len(cs) == 0 {
			v1, err := legacyscheme.Scheme.ConvertToVersion(obj, schema.GroupVersion{Version: "v1"})
			if err != nil {
				t.Fatal(err)
			}
			stored, was := write(t, js, old)
			compareStored(t, v1, stored, was)
		}
		return cs
	}
	ourSide = func(t *testing.T, _ schema.GroupVersionKind, js, old []byte) []cause {
		obj, was := write(t, js, old)
		return ourErrors(part.ValidateUpdate(t.Context(), obj, was))
	}
	return kubeSide, ourSide
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

// ephemeral is an ephemeral container named name, debugging app.
func ephemeral(name string) map[string]any {
	return map[string]any{"name": name, "image": "busybox", "targetContainerName": "app", "stdin": true, "tty": true}
}

func addEphemeral(ctrs ...map[string]any) func(map[string]any) {
	return func(o map[string]any) {
		for _, c := range ctrs {
			spec(o)["ephemeralContainers"] = append(list(spec(o), "ephemeralContainers"), c)
		}
	}
}

func with(m map[string]any, kv ...any) map[string]any {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// ephemeralWrites are writes through pods/ephemeralcontainers: change
// applied to the stored pod (made from resizedPod by set; uncreatable
// when set adds an ephemeral container).
var ephemeralWrites = map[string]update{
	"debugger added": {change: addEphemeral(ephemeral("debugger"))},
	"two added":      {change: addEphemeral(ephemeral("one"), ephemeral("two"))},
	"image ignored": {change: func(o map[string]any) {
		ctr(o, "containers", 0)["image"] = "nginx:2"
		addEphemeral(ephemeral("debugger"))(o)
	}},
	"label ignored": {change: func(o map[string]any) {
		at(o, "metadata", "labels")["app"] = "x"
		addEphemeral(ephemeral("debugger"))(o)
	}},
	"another added":    {set: addEphemeral(ephemeral("first")), uncreatable: true, change: addEphemeral(ephemeral("second"))},
	"existing removed": {set: addEphemeral(ephemeral("first")), uncreatable: true, change: func(o map[string]any) { delete(spec(o), "ephemeralContainers") }, refused: true},
	"existing changed": {set: addEphemeral(ephemeral("first")), uncreatable: true, change: func(o map[string]any) {
		with(list(spec(o), "ephemeralContainers")[0].(map[string]any), "image", "alpine")
	}, refused: true},
	"name of a container":      {change: addEphemeral(ephemeral("app")), refused: true},
	"name twice":               {change: addEphemeral(ephemeral("dbg"), ephemeral("dbg")), refused: true},
	"target missing":           {change: addEphemeral(with(ephemeral("debugger"), "targetContainerName", "nope")), refused: true},
	"image with spaces":        {change: addEphemeral(with(ephemeral("debugger"), "image", " busybox")), refused: true},
	"image missing":            {change: addEphemeral(with(ephemeral("debugger"), "image", nil)), refused: true},
	"name not a DNS label":     {change: addEphemeral(ephemeral("Debug_Er")), refused: true},
	"ports":                    {change: addEphemeral(with(ephemeral("debugger"), "ports", []any{map[string]any{"containerPort": 80}})), refused: true},
	"resources":                {change: addEphemeral(with(ephemeral("debugger"), "resources", map[string]any{"requests": map[string]any{"cpu": "1"}})), refused: true},
	"probe and lifecycle":      {change: addEphemeral(with(ephemeral("debugger"), "readinessProbe", map[string]any{"exec": map[string]any{"command": []any{"true"}}}, "lifecycle", map[string]any{"preStop": map[string]any{"exec": map[string]any{"command": []any{"true"}}}})), refused: true},
	"restart policy":           {change: addEphemeral(with(ephemeral("debugger"), "restartPolicy", "Always")), refused: true},
	"resize policy":            {change: addEphemeral(with(ephemeral("debugger"), "resizePolicy", []any{map[string]any{"resourceName": "cpu", "restartPolicy": "NotRequired"}})), refused: true},
	"pull policy unknown":      {change: addEphemeral(with(ephemeral("debugger"), "imagePullPolicy", "Sometimes")), refused: true},
	"subPath":                  {set: func(o map[string]any) { addVolume(spec(o), "data") }, change: addEphemeral(with(ephemeral("debugger"), "volumeMounts", []any{map[string]any{"name": "data", "mountPath": "/d", "subPath": "x"}})), refused: true},
	"mount of no volume":       {change: addEphemeral(with(ephemeral("debugger"), "volumeMounts", []any{map[string]any{"name": "gone", "mountPath": "/d"}})), refused: true},
	"static pod":               {set: func(o map[string]any) { at(o, "metadata", "annotations")["kubernetes.io/config.mirror"] = "x" }, change: addEphemeral(ephemeral("debugger")), refused: true},
	"target an init container": {change: addEphemeral(with(ephemeral("debugger"), "targetContainerName", "setup"))},
}
