package plugins

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// TestPodResizeValidator checks a resize of a bound pod against its node
// as kube's PodResizeValidator does: its messages, and the cause type
// kube adds to those about the node's OS and capacity.
func TestPodResizeValidator(t *testing.T) {
	src := source{Nodes: {
		"/small":   parse(t, `{"metadata": {"name": "small", "labels": {"kubernetes.io/os": "linux"}}, "status": {"allocatable": {"cpu": "250m", "memory": "1Gi"}}}`),
		"/tiny":    parse(t, `{"metadata": {"name": "tiny"}, "status": {"allocatable": {"cpu": "100m", "memory": "64Mi"}}}`),
		"/windows": parse(t, `{"metadata": {"name": "windows", "labels": {"kubernetes.io/os": "windows"}}, "status": {"allocatable": {"cpu": "8"}}}`),
	}}
	// 100m and 96Mi of containers, a 50m sidecar beside them, a 500m init
	// container run after the sidecar started: kube's PodRequests is 550m
	// and 96Mi.
	pod := func(node string, generation int) string {
		return `{"metadata": {"name": "web", "generation": ` + strconv.Itoa(generation) + `}, "spec": {"nodeName": "` + node + `",
			"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}, {"name": "b", "resources": {"requests": {"memory": "32Mi"}}}],
			"initContainers": [{"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
				{"name": "setup", "resources": {"requests": {"cpu": "500m"}}}]}}`
	}
	tests := []struct {
		name, obj, sub string
		want           string
		cause          api.CauseType
	}{
		{name: "unbound", obj: pod("", 2)},
		{name: "spec unchanged", obj: pod("gone", 1)},
		{name: "not a resize", obj: pod("gone", 2), sub: "status"},
		{name: "node missing", obj: pod("gone", 2), want: `pods "web" is forbidden: node "gone" not found`},
		{name: "windows node", obj: pod("windows", 2), want: `pods "web" is forbidden: pod resize is only supported on linux nodes, node "windows" is "windows"`, cause: "UnsupportedPlatform"},
		{name: "cpu short", obj: pod("small", 2), want: `pods "web" is forbidden: node didn't have enough allocatable resources: cpu, requested: 550, allocatable: 250`, cause: "NodeCapacity"},
		{name: "both short", obj: pod("tiny", 2), cause: "NodeCapacity",
			want: `pods "web" is forbidden: node didn't have enough allocatable resources: cpu, requested: 550, allocatable: 100; memory, requested: 100663296, allocatable: 67108864`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &webhook.Attributes{Operation: webhook.Update, Resource: webhook.GVR{Version: "v1", Resource: "pods"}, Subresource: "resize",
				Namespace: "default", Name: "web", Object: parse(t, tc.obj), OldObject: parse(t, pod("x", 1))}
			if tc.sub != "" {
				a.Subresource = tc.sub
			}
			err := (&podResize{src: src}).validate(context.Background(), a)
			if got := errText(err); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if err == nil {
				return
			}
			var causes []api.StatusCause
			if tc.cause != "" {
				causes = []api.StatusCause{{Type: tc.cause}}
			}
			if diff := cmp.Diff(causes, err.(*api.StatusError).Status.Details.Causes); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
}
