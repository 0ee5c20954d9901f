package interop

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// evictionPod is a pod bound to node n1 with labels, Running and, if
// ready, Ready (as its kubelet would report), or Pending when phase says.
type evictionPod struct {
	name   string
	labels map[string]string
	phase  corev1.PodPhase
	ready  bool
	owner  *metav1.OwnerReference
	volume bool // an emptyDir
}

func (p evictionPod) v1() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "default", Labels: p.labels},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
	if p.owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*p.owner}
	}
	if p.volume {
		pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
	return pod
}

// status is the status its kubelet would report.
func (p evictionPod) status() corev1.PodStatus {
	ready := corev1.ConditionFalse
	if p.ready {
		ready = corev1.ConditionTrue
	}
	return corev1.PodStatus{Phase: p.phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}
}

// createPod creates p on the server and reports its status.
func createPod(t *testing.T, cs kubernetes.Interface, p evictionPod) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	pod, err := cs.CoreV1().Pods("default").Create(ctx, p.v1(), metav1.CreateOptions{})
	if err == nil && p.phase != corev1.PodPending {
		pod.Status = p.status()
		pod, err = cs.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("pod %s: %v", p.name, err)
	}
	return pod
}

// evictionBudget is a PodDisruptionBudget selecting app, with the status a
// disruption controller would have written.
func evictionBudget(name, app string, status policyv1.PodDisruptionBudgetStatus) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
		Status: status,
	}
}

// createBudget creates b on the server with its status.
func createBudget(t *testing.T, cs kubernetes.Interface, b *policyv1.PodDisruptionBudget) {
	t.Helper()
	ctx := t.Context()
	created, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, b, metav1.CreateOptions{})
	if err == nil {
		created.Status = b.Status
		_, err = cs.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(ctx, created, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("budget %s: %v", b.Name, err)
	}
}

// TestKubectlDrain drains a node with each kubectl: its bare pods, pending
// or running, are evicted and deleted, its DaemonSet's pod is left, and
// the pod whose budget allows no disruption stays, kubectl reporting
// kube's 429 message until its --timeout.
func TestKubectlDrain(t *testing.T) {
	eachKubectl(t, func(t *testing.T, k kubectl) {
		t.Parallel() // each kubectl waits 5 s before it tries a refused eviction again
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: k.server, QPS: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		agent := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
				},
			},
		}
		agent, err = cs.AppsV1().DaemonSets("default").Create(ctx, agent, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		createBudget(t, cs, evictionBudget("web", "web", policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: 1, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}))
		for _, p := range []evictionPod{
			{name: "web", labels: map[string]string{"app": "web"}, phase: corev1.PodRunning, ready: true},
			{name: "batch", phase: corev1.PodRunning, ready: true},
			{name: "new", phase: corev1.PodPending},
			{name: "cache", phase: corev1.PodRunning, ready: true, volume: true},
			{name: "agent-x", labels: map[string]string{"app": "agent"}, phase: corev1.PodRunning, ready: true, owner: &metav1.OwnerReference{
				APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: agent.UID, Controller: new(true)}},
		} {
			createPod(t, cs, p)
		}
		out, err := k.run(t, nil, "drain", "n1", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=1s")
		if err == nil || !strings.Contains(out, `error when evicting pods/"web" -n "default" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`) {
			t.Errorf("kubectl drain: %v\n%s", err, out)
		}
		for name, stays := range map[string]bool{"web": true, "agent-x": true, "batch": false, "new": false, "cache": false} {
			_, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if stays != (err == nil) || !stays && !apierrors.IsNotFound(err) {
				t.Errorf("pod %s after the drain: %v, want it kept %v", name, err, stays)
			}
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil || !node.Spec.Unschedulable {
			t.Errorf("node after the drain: %v %+v", err, node.Spec)
		}
	})
}
