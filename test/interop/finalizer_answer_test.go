package interop

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// finalizedAnswer is the answer to the update that removes the last
// finalizer of an object being deleted, reduced to what does not depend
// on the store: whether it is the object, its finalizers, whether it is
// marked, and whether its resourceVersion is the one the update read.
type finalizedAnswer struct {
	Name       string
	Finalizers []string
	Data       map[string]string
	Marked     bool
	ReadRV     bool
	NoRV       bool
}

func finalizedAnswerOf(t *testing.T, obj runtime.Object, read string) finalizedAnswer {
	t.Helper()
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("answered a %T, want a ConfigMap", obj)
	}
	return finalizedAnswer{cm.Name, cm.Finalizers, cm.Data, cm.DeletionTimestamp != nil, cm.ResourceVersion == read, cm.ResourceVersion == ""}
}

// TestClientGoLastFinalizerAnswer removes the last finalizer of a
// ConfigMap being deleted, by PUT (with and without a resourceVersion) and
// by patch, in kube-apiserver's own registry (its patch handler is an
// update whose object is the current one changed) and in the binary
// through client-go: both delete the object and answer the update's
// object, unstored (store.go deleteWithoutFinalizers), not the deleted one.
func TestClientGoLastFinalizerAnswer(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync", "--concurrent-gc-syncs", "0")
	ctx := t.Context()
	cms := typedClientset(t, lw.URL).CoreV1().ConfigMaps("default")
	kube := kubeConfigMaps(t)
	kctx := genericapirequest.WithNamespace(ctx, "default")

	unheld := func(cm *corev1.ConfigMap) *corev1.ConfigMap {
		cm = cm.DeepCopy()
		cm.Finalizers = nil
		cm.Data = map[string]string{"k": "changed"}
		return cm
	}
	for i, update := range []struct {
		name string
		kube func(read *corev1.ConfigMap) rest.UpdatedObjectInfo
		ours func(read *corev1.ConfigMap) (*corev1.ConfigMap, error)
	}{
		{
			name: "put",
			kube: func(read *corev1.ConfigMap) rest.UpdatedObjectInfo {
				return rest.DefaultUpdatedObjectInfo(unheld(read))
			},
			ours: func(read *corev1.ConfigMap) (*corev1.ConfigMap, error) {
				return cms.Update(ctx, unheld(read), metav1.UpdateOptions{})
			},
		},
		{
			name: "unconditional put",
			kube: func(read *corev1.ConfigMap) rest.UpdatedObjectInfo {
				cm := unheld(read)
				cm.ResourceVersion = ""
				return rest.DefaultUpdatedObjectInfo(cm)
			},
			ours: func(read *corev1.ConfigMap) (*corev1.ConfigMap, error) {
				cm := unheld(read)
				cm.ResourceVersion = ""
				return cms.Update(ctx, cm, metav1.UpdateOptions{})
			},
		},
		{
			name: "patch",
			kube: func(*corev1.ConfigMap) rest.UpdatedObjectInfo {
				return rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, cur runtime.Object) (runtime.Object, error) {
					return unheld(cur.(*corev1.ConfigMap)), nil
				})
			},
			ours: func(read *corev1.ConfigMap) (*corev1.ConfigMap, error) {
				return cms.Patch(ctx, read.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null},"data":{"k":"changed"}}`), metav1.PatchOptions{})
			},
		},
	} {
		t.Run(update.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("held%d", i), Namespace: "default", Finalizers: []string{"example.com/hold"}}, Data: map[string]string{"k": "v"}}
			if _, err := kube.Create(kctx, cm.DeepCopy(), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cms.Create(ctx, cm.DeepCopy(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := kube.Delete(kctx, cm.Name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			kread, err := kube.Get(kctx, cm.Name, &metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			read, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}

			kobj, _, err := kube.Update(kctx, cm.Name, update.kube(kread.(*corev1.ConfigMap)), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("kube's registry: %v", err)
			}
			got, err := update.ours(read)
			if err != nil {
				t.Fatal(err)
			}
			want := finalizedAnswerOf(t, kobj, kread.(*corev1.ConfigMap).ResourceVersion)
			if d := cmp.Diff(want, finalizedAnswerOf(t, got, read.ResourceVersion)); d != "" {
				t.Errorf("answer (-kube +listwatch):\n%s", d)
			}
			if _, err := kube.Get(kctx, cm.Name, &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("kube's registry kept it: %v", err)
			}
			if _, err := cms.Get(ctx, cm.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("listwatch kept it: %v", err)
			}
		})
	}
}
