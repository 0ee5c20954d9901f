package interop

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestClientGoGarbageCollection deletes owners through client-go against
// the real binary, in the background as kubectl does by default, and
// watches the server's collector delete their dependents: built-in ones
// of a ConfigMap, and of a custom resource.
func TestClientGoGarbageCollection(t *testing.T) {
	bin := listwatchBin(t)
	lw := StartListwatch(t, bin, "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cs := typedClientset(t, lw.URL)
	ctx := t.Context()
	background := metav1.DeletePropagationBackground

	t.Run("ConfigMap owner", func(t *testing.T) {
		owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
		deps := createDependents(t, cs, ref, "cm-dep-0", "cm-dep-1", "cm-dep-2")
		w := watchConfigMaps(t, cs, owner.ResourceVersion)
		if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
			t.Fatal(err)
		}
		waitDeleted(t, w, deps)
	})

	t.Run("custom resource owner", func(t *testing.T) {
		dc := dynamicClient(t, lw.URL)
		defineWidgets(t, dc)
		widgets := dc.Resource(widgetGVR).Namespace("default")
		owner, err := widgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": widgetGVR.GroupVersion().String(), "kind": "Widget",
			"metadata": map[string]any{"name": "owner"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		block := true
		ref := metav1.OwnerReference{APIVersion: widgetGVR.GroupVersion().String(), Kind: "Widget", Name: owner.GetName(), UID: owner.GetUID(), BlockOwnerDeletion: &block}
		secret, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "widget-secret", OwnerReferences: []metav1.OwnerReference{ref}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deps := createDependents(t, cs, ref, "widget-dep-0", "widget-dep-1")
		cmWatch := watchConfigMaps(t, cs, owner.GetResourceVersion())
		secretWatch, err := cs.CoreV1().Secrets("default").Watch(ctx, metav1.ListOptions{ResourceVersion: owner.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(secretWatch.Stop)
		if err := widgets.Delete(ctx, owner.GetName(), metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
			t.Fatal(err)
		}
		waitDeleted(t, cmWatch, deps)
		waitDeleted(t, secretWatch, map[types.UID]string{secret.UID: secret.Name})
	})

	// The owners below carry the finalizer a DELETE with that policy puts.
	t.Run("foreground", func(t *testing.T) {
		owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fg-owner", Finalizers: []string{metav1.FinalizerDeleteDependents}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		block := true
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &block}
		deps := createDependents(t, cs, ref, "fg-dep-0", "fg-dep-1")
		w := watchConfigMaps(t, cs, owner.ResourceVersion)
		foreground := metav1.DeletePropagationForeground
		if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
			t.Fatal(err)
		}
		deps[owner.UID] = owner.Name
		if order := waitDeleted(t, w, deps); order[len(order)-1] != owner.UID {
			t.Fatalf("deleted in the order %v: the owner before a blocking dependent", order)
		}
	})

	t.Run("orphan", func(t *testing.T) {
		owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orphan-owner", Finalizers: []string{metav1.FinalizerOrphanDependents}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
		deps := createDependents(t, cs, ref, "orphan-dep-0", "orphan-dep-1")
		w := watchConfigMaps(t, cs, owner.ResourceVersion)
		orphan := metav1.DeletePropagationOrphan
		if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
			t.Fatal(err)
		}
		waitDeleted(t, w, map[types.UID]string{owner.UID: owner.Name})
		for _, name := range deps {
			cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(cm.OwnerReferences) != 0 {
				t.Fatalf("orphaned dependent %s: %v, %v", name, cm.OwnerReferences, err)
			}
		}
	})
}

// createDependents creates ConfigMaps owned through ref and returns their
// names by uid.
func createDependents(t *testing.T, cs *kubernetes.Clientset, ref metav1.OwnerReference, names ...string) map[types.UID]string {
	t.Helper()
	deps := map[types.UID]string{}
	for _, name := range names {
		cm, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ref}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deps[cm.UID] = name
	}
	return deps
}

func watchConfigMaps(t *testing.T, cs *kubernetes.Clientset, rv string) watch.Interface {
	t.Helper()
	w, err := cs.CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// waitDeleted waits until w has delivered the deletion of every object of
// want (names by uid), and returns their uids in the order they went.
func waitDeleted(t *testing.T, w watch.Interface, want map[types.UID]string) []types.UID {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), convergeTimeout)
	defer cancel()
	var order []types.UID
	for len(order) < len(want) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended with %d of %d objects left", len(want)-len(order), len(want))
			}
			obj, isMeta := ev.Object.(metav1.Object)
			if ev.Type == watch.Deleted && isMeta {
				if _, ok := want[obj.GetUID()]; ok {
					order = append(order, obj.GetUID())
				}
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d objects still there: %v", len(want)-len(order), len(want), want)
		}
	}
	return order
}
