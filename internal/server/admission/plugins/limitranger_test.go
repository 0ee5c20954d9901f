package plugins

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// TestLimitRanger checks when LimitRanger acts and what it writes;
// test/interop/admissionplugins proves its defaults and refusals equal
// kube's.
func TestLimitRanger(t *testing.T) {
	src := source{LimitRanges: {
		"ns/b": parse(t, `{"metadata": {"name": "b"}, "spec": {"limits": [{"type": "Container", "default": {"cpu": "2"}, "defaultRequest": {"memory": "1Gi"}}]}}`),
		"ns/a": parse(t, `{"metadata": {"name": "a"}, "spec": {"limits": [
			{"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "100m"}},
			{"type": "Container", "default": {"cpu": "500m"}},
			{"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}}]}}`),
	}}
	const pod = `{"metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c", "resources": {"limits": {"cpu": "3"}}}]}}`
	const claim = `{"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": "2Gi"}}}}`
	tests := []struct {
		name, resource, op, obj, old string
		want, err                    string
	}{{
		// The later Container limit of a range wins; the first range
		// (by name) to default a resource does.
		name: "defaults", resource: "pods", op: webhook.Create, obj: pod,
		want: `{"metadata": {"name": "p", "annotations": {"kubernetes.io/limit-ranger":
			"LimitRanger plugin set: cpu request for container c; cpu request for init container i; cpu limit for init container i; memory request for container c; memory request for init container i"}},
			"spec": {"initContainers": [{"name": "i", "resources": {"limits": {"cpu": "500m"}, "requests": {"cpu": "100m", "memory": "1Gi"}}}],
			"containers": [{"name": "c", "resources": {"limits": {"cpu": "3"}, "requests": {"cpu": "100m", "memory": "1Gi"}}}]}}`,
	}, {
		name: "a pod's update is left alone", resource: "pods", op: webhook.Update, obj: pod, old: pod, want: pod,
	}, {
		name: "a claim over the max", resource: "persistentvolumeclaims", op: webhook.Update, obj: claim, old: claim, want: claim,
		err: `persistentvolumeclaims "c" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi`,
	}, {
		name: "a claim being deleted", resource: "persistentvolumeclaims", op: webhook.Update, obj: claim, want: claim,
		old: `{"metadata": {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"}}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &webhook.Attributes{Operation: tc.op, Resource: webhook.GVR{Version: "v1", Resource: tc.resource}, Namespace: "ns", Name: "c", Object: parse(t, tc.obj)}
			if tc.old != "" {
				a.OldObject = parse(t, tc.old)
			}
			l := &limitRanger{src: src}
			if err := l.admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(parse(t, tc.want), a.Object); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got := errText(l.validate(context.Background(), a)); got != tc.err {
				t.Errorf("got %q, want %q", got, tc.err)
			}
		})
	}
}
