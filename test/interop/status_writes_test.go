package interop

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	var st apierrors.APIStatus
	if !errors.As(err, &st) || !apierrors.IsInvalid(err) || st.Status().Details == nil ||
		len(st.Status().Details.Causes) != 1 || st.Status().Details.Causes[0].Field != "status.podIPs" {
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
}
