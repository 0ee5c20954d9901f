package interop

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/client"
)

// TestClientTypedApplyAndSubresources drives the client's server-side
// apply, status and scale writes with k8s.io/api's Deployment against the
// binary, and reads the results through client-go: the apply creates the
// object owned by its manager, a second manager's apply of the same field
// conflicts unless forced, a status write keeps the spec and a scale
// write moves the replicas.
func TestClientTypedApplyAndSubresources(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	c, err := client.New(client.ConfigForURL(lw.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	deps := client.NewResource[*appsv1.Deployment](c, client.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "default")
	replicas := func(n int32) *int32 { return &n }
	intent := func(n int32) *appsv1.Deployment {
		labels := map[string]string{"app": "web"}
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: replicas(n), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}},
			},
		}
	}
	if _, err := deps.Apply(ctx, "web", intent(2), client.ApplyOptions{FieldManager: "deployer"}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if _, err := deps.Apply(ctx, "web", intent(5), client.ApplyOptions{FieldManager: "autoscaler"}); !client.IsConflict(err) {
		t.Fatalf("apply of replicas owned by another manager: %v, want a Conflict", err)
	}
	if _, err := deps.Apply(ctx, "web", intent(5), client.ApplyOptions{FieldManager: "autoscaler", Force: true}); err != nil {
		t.Fatalf("forced apply: %v", err)
	}

	d, err := typedClientset(t, lw.URL).AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]string{}
	for _, m := range d.ManagedFields {
		managers[m.Manager] = string(m.Operation)
	}
	if *d.Spec.Replicas != 5 || managers["deployer"] != "Apply" || managers["autoscaler"] != "Apply" {
		t.Errorf("after two applies: replicas %d, managers %v, want 5 and both appliers", *d.Spec.Replicas, managers)
	}

	d.Status.Replicas, d.Spec.Replicas = 1, replicas(9)
	got, err := deps.UpdateStatus(ctx, d, client.WriteOptions{})
	if err != nil || got.Status.Replicas != 1 || *got.Spec.Replicas != 5 {
		t.Fatalf("UpdateStatus: %v; status.replicas %d, spec.replicas %d, want 1 and 5", err, got.Status.Replicas, *got.Spec.Replicas)
	}
	s, err := deps.GetScale(ctx, "web")
	if err != nil || s.Spec.Replicas != 5 || s.Status.Replicas != 1 || s.Status.Selector != "app=web" {
		t.Fatalf("GetScale: %+v, %v", s, err)
	}
	s.Spec.Replicas = 3
	if _, err := deps.UpdateScale(ctx, "web", s, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	scale, err := typedClientset(t, lw.URL).AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 3 {
		t.Errorf("client-go reads the scale %+v, %v, want 3 replicas", scale, err)
	}
}
