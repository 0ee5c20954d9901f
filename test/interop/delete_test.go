package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	vfield "k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestClientGoDeleteAnswers drives the binary's DELETE with client-go's
// typed (protobuf) and dynamic clients and a JSON REST client, and expects
// what kube-apiserver's registry returns (k8s.io/apiserver
// pkg/registry/generic/registry/store.go, rest/delete.go, etcd3/store.go;
// pkg/registry/core/*/storage for ReturnDeletedObject). Errors are built
// with apimachinery's own constructors and validation.
func TestClientGoDeleteAnswers(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	ctx := t.Context()
	cs := typedClientset(t, lw.URL)
	js, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps("default")
	create := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return cm
	}
	// rawDelete answers a DELETE of path's object, decoded from JSON into out.
	rawDelete := func(path string, opts *metav1.DeleteOptions, out any) {
		t.Helper()
		b, err := js.CoreV1().RESTClient().Delete().AbsPath(path).Body(opts).Do(ctx).Raw()
		if err != nil {
			t.Fatalf("delete %s: %v", path, err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("delete %s: %v: %s", path, err, b)
		}
	}
	const core = "/api/v1/namespaces/default/"

	t.Run("status", func(t *testing.T) {
		// finalizeDelete: a ConfigMap's storage leaves ReturnDeletedObject false.
		cm := create("status")
		var got metav1.Status
		rawDelete(core+"configmaps/status", &metav1.DeleteOptions{}, &got)
		want := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
			Details: &metav1.StatusDetails{Name: "status", Kind: "configmaps", UID: cm.UID}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("delete answer (-want +got):\n%s", d)
		}
		create("typed")
		if err := cms.Delete(ctx, "typed", metav1.DeleteOptions{}); err != nil {
			t.Errorf("typed (protobuf) delete: %v", err)
		}
	})

	t.Run("object at the delete's revision", func(t *testing.T) {
		// ServiceAccount storage returns the deleted object, decoded by the
		// etcd3 store at the delete response's revision: the DELETED event's.
		sas := cs.CoreV1().ServiceAccounts("default")
		sa, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := sas.Watch(ctx, metav1.ListOptions{ResourceVersion: sa.ResourceVersion, FieldSelector: "metadata.name=robot"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var got corev1.ServiceAccount
		rawDelete(core+"serviceaccounts/robot", &metav1.DeleteOptions{}, &got)
		ev := <-w.ResultChan()
		deleted, _ := ev.Object.(*corev1.ServiceAccount)
		if ev.Type != watch.Deleted || deleted == nil {
			t.Fatalf("watch: %v %T", ev.Type, ev.Object)
		}
		if got.UID != sa.UID || got.ResourceVersion != deleted.ResourceVersion || got.ResourceVersion == sa.ResourceVersion {
			t.Errorf("delete answered %s at %s; DELETED event at %s, created at %s", got.UID, got.ResourceVersion, deleted.ResourceVersion, sa.ResourceVersion)
		}
	})

	t.Run("preconditions", func(t *testing.T) {
		cm := create("pre")
		bad, badUID := "x", types.UID("x")
		for _, tc := range []struct {
			pre  metav1.Preconditions
			want error
		}{
			{metav1.Preconditions{UID: &badUID}, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", bad, cm.UID)},
			{metav1.Preconditions{ResourceVersion: &bad}, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", bad, cm.ResourceVersion)},
		} {
			// rest.BeforeDelete names the object by its kind.
			want := apierrors.NewConflict(schema.GroupResource{Resource: "ConfigMap"}, "pre", tc.want)
			err := cms.Delete(ctx, "pre", metav1.DeleteOptions{Preconditions: &tc.pre})
			checkStatusError(t, err, want)
		}
	})

	t.Run("options", func(t *testing.T) {
		create("opts")
		orphan, policy, never := true, metav1.DeletePropagationOrphan, metav1.DeletionPropagation("Never")
		for _, opts := range []metav1.DeleteOptions{
			{PropagationPolicy: &never},
			{PropagationPolicy: &policy, OrphanDependents: &orphan},
			{PropagationPolicy: &never, OrphanDependents: &orphan},
			{DryRun: []string{"Some"}},
		} {
			want := apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", validation.ValidateDeleteOptions(&opts))
			checkStatusError(t, cms.Delete(ctx, "opts", opts), want)
		}
		if err := cms.Delete(ctx, "opts", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry-run delete: %v", err)
		}
		if _, err := cms.Get(ctx, "opts", metav1.GetOptions{}); err != nil {
			t.Fatalf("after a dry-run delete: %v", err)
		}
	})

	t.Run("dryRun values", func(t *testing.T) {
		// Each write handler validates its options (ValidateCreateOptions, ...).
		cm := create("dry")
		some := []string{"Some"}
		invalid := func(kind string, errs vfield.ErrorList) *apierrors.StatusError {
			return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
		}
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry2"}}, metav1.CreateOptions{DryRun: some})
		checkStatusError(t, err, invalid("CreateOptions", validation.ValidateCreateOptions(&metav1.CreateOptions{DryRun: some})))
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{DryRun: some})
		checkStatusError(t, err, invalid("UpdateOptions", validation.ValidateUpdateOptions(&metav1.UpdateOptions{DryRun: some})))
		_, err = cms.Patch(ctx, "dry", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{DryRun: some})
		checkStatusError(t, err, invalid("PatchOptions", validation.ValidatePatchOptions(&metav1.PatchOptions{DryRun: some}, types.MergePatchType)))
	})

	t.Run("finalizers", func(t *testing.T) {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var marked corev1.ConfigMap
		rawDelete(core+"configmaps/held", &metav1.DeleteOptions{}, &marked)
		if marked.DeletionTimestamp == nil || len(marked.Finalizers) != 1 {
			t.Fatalf("delete of an object with finalizers answered %+v", marked.ObjectMeta)
		}
		// store.Update's deleteWithoutFinalizers answers the updated object,
		// never stored, at the revision it was read at
		// (TestClientGoLastFinalizerAnswer compares it with kube's).
		marked.Finalizers = nil
		got, err := cms.Update(ctx, &marked, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Finalizers) != 0 || got.DeletionTimestamp == nil || got.ResourceVersion != marked.ResourceVersion {
			t.Errorf("update removing the last finalizer answered %+v", got.ObjectMeta)
		}
		if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after the last finalizer: %v", err)
		}
	})

	t.Run("custom resource", func(t *testing.T) {
		dc := dynamicClient(t, lw.URL)
		defineWidgets(t, dc)
		widgets := dc.Resource(widgetGVR).Namespace("default")
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "interop.example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}
		created, err := widgets.Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The custom resource storage (apiextensions-apiserver
		// pkg/registry/customresource/etcd.go) leaves ReturnDeletedObject false.
		var got metav1.Status
		rawDelete("/apis/interop.example.com/v1/namespaces/default/widgets/w", &metav1.DeleteOptions{}, &got)
		want := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
			Details: &metav1.StatusDetails{Name: "w", Group: widgetGVR.Group, Kind: widgetGVR.Resource, UID: created.GetUID()}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("delete (-want +got):\n%s", d)
		}
	})
}

// checkStatusError fails unless err is a Status error equal to want's.
func checkStatusError(t *testing.T, err error, want *apierrors.StatusError) {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want %v", err, want)
	}
	if d := cmp.Diff(want.ErrStatus, se.ErrStatus); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}
