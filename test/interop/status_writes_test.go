package interop

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// TestClientGoStatusWrites writes status through client-go's typed
// clientset (protobuf) to the binary, as controllers do, and expects the
// metadata kube's status strategies keep (kubevalidation
// TestStatusMetadata compares them with kube's): a Pod's status write
// takes the request's labels, a Deployment's keeps the stored ones, and a
// finalizer removed through a deleted Deployment's status lets it go; a
// Pod's status of two IPv4 podIPs is refused.
func TestClientGoStatusWrites(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync", "--concurrent-gc-syncs", "0")
	ctx := t.Context()
	cs := typedClientset(t, lw.URL)

	pods := cs.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "p"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels["app"] = "relabelled"
	pod.Status.Phase = corev1.PodRunning
	if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if pod.Labels["app"] != "relabelled" || pod.Status.Phase != corev1.PodRunning {
		t.Errorf("pod status write answered labels %v, phase %q; want the request's", pod.Labels, pod.Status.Phase)
	}
	// kube's pod status rules: one IP per family.
	pod.Status.PodIP, pod.Status.PodIPs = "10.0.0.1", []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); !invalidCause(err, "status.podIPs") {
		t.Errorf("pod status write with two IPv4 podIPs: %v; want status.podIPs invalid", err)
	}

	deployments := cs.AppsV1().Deployments("default")
	labels := map[string]string{"app": "d"}
	d, err := deployments.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: labels, Finalizers: []string{"example.com/hold"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Labels = map[string]string{"app": "relabelled"}
	d.Annotations = map[string]string{"a": "b"}
	d.Status.Replicas = 1
	if d, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.Labels["app"] != "d" || d.Annotations["a"] != "b" || d.Status.Replicas != 1 {
		t.Errorf("deployment status write answered labels %v, annotations %v, replicas %d; want the stored labels, the request's annotations", d.Labels, d.Annotations, d.Status.Replicas)
	}
	if err := deployments.Delete(ctx, "d", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, err = deployments.Get(ctx, "d", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	d.Finalizers = nil
	if _, err := deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deployments.Get(ctx, "d", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after its last finalizer went through status: %v", err)
	}

	statusRules(t, cs)
}

// invalidCause says whether err is a 422 whose only cause is of field.
func invalidCause(err error, field string) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st) && apierrors.IsInvalid(err) && st.Status().Details != nil &&
		len(st.Status().Details.Causes) == 1 && st.Status().Details.Causes[0].Field == field
}

// statusRules writes through client-go the statuses of kinds whose
// status strategies kubevalidation TestStatusRules compares with kube's:
// a PodDisruptionBudget's conditions as the disruption controller writes
// them (no message) are stored, a negative disruptionsAllowed is refused;
// a Node's fractional pod capacity and an HPA's negative desiredReplicas
// are refused, a Node's status config is dropped, and a Node's status
// applied takes its labels but not its spec.
func statusRules(t *testing.T, cs kubernetes.Interface) {
	ctx := t.Context()
	pdbs := cs.PolicyV1().PodDisruptionBudgets("default")
	one := intstr.FromInt32(1)
	pdb, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "pdb"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "p"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, Conditions: []metav1.Condition{
		{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason, LastTransitionTime: metav1.Now()},
	}}
	if pdb, err = pdbs.UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(pdb.Status.Conditions) != 1 || pdb.Status.ExpectedPods != 1 {
		t.Errorf("pdb status stored: %+v", pdb.Status)
	}
	pdb.Status.DisruptionsAllowed = -1
	if _, err := pdbs.UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); !invalidCause(err, "status.disruptionsAllowed") {
		t.Errorf("pdb status write with disruptionsAllowed -1: %v; want status.disruptionsAllowed invalid", err)
	}

	nodes := cs.CoreV1().Nodes()
	node, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1500m")}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")} // else defaulted to the capacity
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); !invalidCause(err, "status.capacity.pods") {
		t.Errorf("node status write of 1.5 pods: %v; want status.capacity.pods invalid", err)
	}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
	node.Status.Config = &corev1.NodeConfigStatus{Error: "e"}
	if node, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if node.Status.Config != nil || node.Status.Capacity.Pods().Value() != 110 {
		t.Errorf("node status stored: config %v, capacity %v; want no config, 110 pods", node.Status.Config, node.Status.Capacity)
	}
	// Applied through status, the spec is neither changed nor owned; the
	// labels are both (kubevalidation TestPartApplies compares the
	// managedFields with kube's field manager).
	applied := corev1ac.Node("node-1").WithLabels(map[string]string{"zone": "b"}).
		WithSpec(corev1ac.NodeSpec().WithUnschedulable(true)).
		WithStatus(corev1ac.NodeStatus().WithCapacity(corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100")}))
	if node, err = nodes.ApplyStatus(ctx, applied, metav1.ApplyOptions{FieldManager: "ctl", Force: true}); err != nil {
		t.Fatal(err)
	}
	var owned string
	for _, e := range node.ManagedFields {
		if e.Manager == "ctl" && e.Subresource == "status" && e.Operation == metav1.ManagedFieldsOperationApply {
			owned = string(e.FieldsV1.Raw)
		}
	}
	if node.Spec.Unschedulable || node.Labels["zone"] != "b" || node.Status.Capacity.Pods().Value() != 100 ||
		owned != `{"f:metadata":{"f:labels":{"f:zone":{}}},"f:status":{"f:capacity":{"f:pods":{}}}}` {
		t.Errorf("node status applied: unschedulable %v, labels %v, capacity %v, ctl owns %s", node.Spec.Unschedulable, node.Labels, node.Status.Capacity, owned)
	}

	hpas := cs.AutoscalingV2().HorizontalPodAutoscalers("default")
	hpa, err := hpas.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d"}, MaxReplicas: 3,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hpa.Status.DesiredReplicas = -2
	if _, err := hpas.UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); !invalidCause(err, "status.desiredReplicas") {
		t.Errorf("hpa status write of -2 desired replicas: %v; want status.desiredReplicas invalid", err)
	}
}
