package interop

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/client"
)

// Kubernetes' own types satisfy the client's small object interface
// through metav1.ObjectMeta: no code generation, no client-go.
var _ client.Object = (*corev1.ConfigMap)(nil)

// TestClientWithKubernetesTypes reads and writes k8s.io/api's typed
// ConfigMap through client.Resource against the real binary.
func TestClientWithKubernetesTypes(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	c, err := client.New(client.ConfigForURL(lw.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	cms := client.NewResource[*corev1.ConfigMap](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "default")
	w, err := cms.Watch(ctx, client.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	created, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "typed", Labels: map[string]string{"app": "x"}},
		Data:       map[string]string{"k": "v"},
	}, client.WriteOptions{FieldManager: "interop"})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.CreationTimestamp.IsZero() || created.ManagedFields[0].Manager != "interop" {
		t.Errorf("created %+v", created.ObjectMeta)
	}
	created.Data["k"] = "w"
	if _, err := cms.Update(ctx, created, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	items, rv, err := cms.ListAll(ctx, client.ListOptions{LabelSelector: "app=x"})
	if err != nil || len(items) != 1 || items[0].Data["k"] != "w" || rv == "" {
		t.Fatalf("ListAll: %v at %q, %v", items, rv, err)
	}
	for _, want := range []client.EventType{client.Added, client.Modified} {
		ev := <-w.Events()
		if ev.Type != want || ev.Object.Name != "typed" || ev.Object.Labels["app"] != "x" {
			t.Errorf("event %s %s, want %s typed", ev.Type, ev.Object.GetName(), want)
		}
	}
	if err := cms.Delete(ctx, "typed", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "typed"); !client.IsNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
}
