package admissionplugins

import (
	"maps"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"
)

const (
	zoneLabel   = "topology.kubernetes.io/zone"
	regionLabel = "topology.kubernetes.io/region"
)

// topologyPod is a pod labelled with a zone of its own, on node ("":
// none).
func topologyPod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web", zoneLabel: "mine"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
}

// TestPodTopologyAsKubesPlugin creates pods on nodes and binds pods to
// nodes on the binary, with client-go (bindings in protobuf, as
// kube-scheduler sends them; one through the legacy bindings), and compares the pods' labels with what
// kube's PodTopologyLabels makes of the same pods and Bindings, fed the
// binary's nodes (labels that ValidatePodBinding does not check
// included); and refuses invalid Bindings with kube's ValidatePodBinding's
// message.
func TestPodTopologyAsKubesPlugin(t *testing.T) {
	cs, url := startAt(t)
	ctx := t.Context()
	createCached(t, cs.CoreV1().Nodes(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "zoned",
		Labels: map[string]string{zoneLabel: "z1", regionLabel: "r1", "kubernetes.io/hostname": "zoned"}}})
	createCached(t, cs.CoreV1().Nodes(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "plain"}})
	pods := cs.CoreV1().Pods(ns)
	podLabels := func(p *corev1.Pod) any { return p.Labels }
	for name, node := range map[string]string{"on-zoned": "zoned", "on-plain": "plain", "on-missing-node": "gone", "unscheduled": ""} {
		compare(t, cs, topologyPod(name, node), pods, podLabels)
	}

	pb, err := kubernetes.NewForConfig(&rest.Config{Host: url, QPS: -1, ContentConfig: rest.ContentConfig{
		ContentType: "application/vnd.kubernetes.protobuf", AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	podsResource := kindResource(t, &corev1.Pod{})
	bindingsResource := podsResource.GroupVersion().WithResource("bindings")
	for _, tc := range []struct {
		name   string
		target corev1.ObjectReference
		labels map[string]string
		legacy bool // POSTed to bindings, kube's legacy form
	}{
		{"bind-zoned", corev1.ObjectReference{Kind: "Node", Name: "zoned"}, map[string]string{"bound": "yes", regionLabel: "ours"}, false},
		{"bind-kindless", corev1.ObjectReference{Name: "zoned"}, nil, false},
		{"bind-plain", corev1.ObjectReference{Kind: "Node", Name: "plain"}, nil, false},
		{"bind-missing-node", corev1.ObjectReference{Kind: "Node", Name: "gone"}, nil, false},
		{"bind-legacy", corev1.ObjectReference{Kind: "Node", Name: "zoned"}, map[string]string{"bound": "yes"}, true},
		// Labels a pod's own write could not carry: kube copies them.
		{"bind-unchecked-labels", corev1.ObjectReference{Name: "plain"}, map[string]string{"not a key!": "not a value!"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pods.Create(ctx, topologyPod(tc.name, ""), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Labels: tc.labels}, Target: tc.target}
			if internal, _ := decodeAsKube(t, b); len(validation.ValidatePodBinding(internal.(*core.Binding))) != 0 {
				t.Fatalf("kube's ValidatePodBinding refuses %v", b)
			}
			resource, subresource := podsResource, "binding"
			if tc.legacy {
				resource, subresource = bindingsResource, ""
			}
			admitted, err := kubeAdmitTo(t, cs, b.DeepCopy(), nil, resource, subresource)
			if err != nil {
				t.Fatal(err)
			}
			// kube's BindingREST copies the Binding's labels over the pod's.
			want := maps.Clone(p.Labels)
			maps.Copy(want, admitted.(*corev1.Binding).Labels)
			if tc.legacy {
				err = pb.CoreV1().RESTClient().Post().Namespace(ns).Resource("bindings").Body(b).Do(ctx).Error()
			} else {
				err = pb.CoreV1().Pods(ns).Bind(ctx, b, metav1.CreateOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := pods.Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got.Labels); diff != "" || got.Spec.NodeName != tc.target.Name {
				t.Errorf("labels (-kube +listwatch):\n%s\nnode %q", diff, got.Spec.NodeName)
			}
		})
	}

	for name, target := range map[string]corev1.ObjectReference{
		"pod-target": {Kind: "Pod", Name: "x"}, "no-target": {}, "bad-node-name": {Name: "N_1"}, "pod-no-name": {Kind: "Pod"},
	} {
		t.Run(name, func(t *testing.T) {
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "unscheduled"}, Target: target}
			internal, _ := decodeAsKube(t, b)
			want := validation.ValidatePodBinding(internal.(*core.Binding)).ToAggregate().Error()
			// kube's BindingREST returns the errors unconverted: a 500.
			err := pods.Bind(ctx, b, metav1.CreateOptions{})
			if s, ok := err.(apierrors.APIStatus); !ok || s.Status().Code != http.StatusInternalServerError || s.Status().Reason != "" || s.Status().Message != want {
				t.Errorf("got %v, want a 500 saying %q", err, want)
			}
		})
	}
}
