package interop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	metafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/controller/namespace/deletion"
)

// namespaceCondition is a namespace condition without its time.
type namespaceCondition struct{ Type, Status, Reason, Message string }

func namespaceConditions(ns *corev1.Namespace) []namespaceCondition {
	var out []namespaceCondition
	for _, c := range ns.Status.Conditions {
		out = append(out, namespaceCondition{string(c.Type), string(c.Status), c.Reason, c.Message})
	}
	return out
}

// kubeNamespaceWorld runs kube-controller-manager's namespace deleter
// (pkg/controller/namespace/deletion) on fake clients holding a
// Terminating namespace and its ConfigMaps and Pods, the fake metadata
// client keeping, as kube-apiserver does, an object with finalizers marked
// rather than deleted.
type kubeNamespaceWorld struct {
	cs      *fake.Clientset
	meta    *metafake.FakeMetadataClient
	deleter deletion.NamespacedResourcesDeleterInterface
}

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func newKubeNamespaceWorld(t *testing.T, ns *corev1.Namespace, contents ...runtime.Object) *kubeNamespaceWorld {
	var metas []runtime.Object
	for _, obj := range contents {
		var md metav1.ObjectMeta
		kind := "ConfigMap"
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			md = o.ObjectMeta
		case *corev1.Pod:
			md, kind = o.ObjectMeta, "Pod"
		default:
			t.Fatalf("no kind for %T", obj)
		}
		metas = append(metas, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}, ObjectMeta: md})
	}
	scheme := metafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &kubeNamespaceWorld{cs: fake.NewClientset(append(contents, ns)...), meta: metafake.NewSimpleMetadataClient(scheme, metas...)}
	w.meta.PrependReactor("delete", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		d := a.(clienttesting.DeleteAction)
		obj, err := w.meta.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		m := obj.(*metav1.PartialObjectMetadata)
		if len(m.Finalizers) == 0 {
			return false, nil, nil
		}
		now := metav1.Now()
		m.DeletionTimestamp = &now
		return true, nil, w.meta.Tracker().Update(d.GetResource(), m, d.GetNamespace())
	})
	// kube-apiserver's finalize keeps the status (FinalizeStrategy); the
	// fake's (a create of the subresource) would write the whole object.
	nsGVR := corev1.SchemeGroupVersion.WithResource("namespaces")
	w.cs.PrependReactor("create", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		u := a.(clienttesting.CreateAction)
		if u.GetSubresource() != "finalize" {
			return false, nil, nil
		}
		cur, err := w.cs.Tracker().Get(nsGVR, "", ns.Name)
		if err != nil {
			return true, nil, err
		}
		next := u.GetObject().(*corev1.Namespace).DeepCopy()
		next.Status = cur.(*corev1.Namespace).Status
		return true, next, w.cs.Tracker().Update(nsGVR, next, "")
	})
	verbs := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	discover := func() ([]*metav1.APIResourceList, error) {
		return []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: verbs},
			{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: verbs},
		}}}, nil
	}
	// The fake metadata client has no DeleteCollection: list and delete.
	w.meta.PrependReactor("delete-collection", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewMethodNotSupported(a.GetResource().GroupResource(), "deletecollection")
	})
	w.deleter = deletion.NewNamespacedResourcesDeleter(t.Context(), w.cs.CoreV1().Namespaces(), w.meta, w.cs.CoreV1(), discover, corev1.FinalizerKubernetes)
	return w
}

func (w *kubeNamespaceWorld) namespace(t *testing.T, name string) *corev1.Namespace {
	ns, err := w.cs.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// deleteAsKube deletes namespace team, holding contents, on the binary,
// runs kube's deleter once on the same content, which finds some remains,
// waits until the binary's conditions of the namespace are what kube's
// deleter wrote, and returns kube's world.
func deleteAsKube(t *testing.T, nss typedcorev1.NamespaceInterface, contents ...runtime.Object) *kubeNamespaceWorld {
	t.Helper()
	ctx := t.Context()
	if err := nss.Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	marked, err := nss.Get(ctx, "team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kube := newKubeNamespaceWorld(t, marked.DeepCopy(), contents...)
	var remaining *deletion.ResourcesRemainingError
	if err := kube.deleter.Delete(ctx, "team"); !errors.As(err, &remaining) {
		t.Fatalf("kube's deleter: %v, want content remaining", err)
	}
	want := namespaceConditions(kube.namespace(t, "team"))
	waitUntil(t, "the namespace's conditions", func(ctx context.Context) (bool, string, error) {
		ns, err := nss.Get(ctx, "team", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		d := cmp.Diff(want, namespaceConditions(ns))
		return d == "" && ns.Status.Phase == corev1.NamespaceTerminating, fmt.Sprintf("phase %s, conditions (-kube's +ours):\n%s", ns.Status.Phase, d), nil
	})
	return kube
}

// TestClientGoNamespaceDeletion: with client-go, deleting a namespace on
// the binary leaves it Terminating while a finalizer holds a ConfigMap of
// it, with the conditions kube's namespace deleter writes for the same
// content; once the finalizer goes, the controller removes "kubernetes"
// from spec.finalizers, with the conditions kube's deleter leaves, and
// client-go's Finalize of the rest deletes the namespace. Finalize's
// validation is kube's ValidateNamespaceFinalizeUpdate.
func TestClientGoNamespaceDeletion(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync", "--namespace-deletion-grace-period=100ms")
	ctx := t.Context()
	cs := typedClientset(t, lw.URL)
	nss := cs.CoreV1().Namespaces()
	ns, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/keep"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []corev1.FinalizerName{"example.com/keep", corev1.FinalizerKubernetes}; !slices.Equal(ns.Spec.Finalizers, want) {
		t.Errorf("created with spec.finalizers %v, want %v", ns.Spec.Finalizers, want)
	}
	cms := cs.CoreV1().ConfigMaps("team")
	held, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/x"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	free, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "free"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kube := deleteAsKube(t, nss, held, free)
	if _, err := cms.Get(ctx, "free", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap without finalizers: %v, want it deleted", err)
	}
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Errorf("create in a Terminating namespace: %v, want Forbidden with cause %s", err, corev1.NamespaceTerminatingCause)
	}

	// The finalizer goes: kube's apiserver deletes the ConfigMap.
	if err := kube.meta.Tracker().Delete(configMapsGVR, "team", "held"); err != nil {
		t.Fatal(err)
	}
	if err := kube.deleter.Delete(ctx, "team"); err != nil {
		t.Fatalf("kube's deleter once empty: %v", err)
	}
	kubeNS := kube.namespace(t, "team")
	if _, err := cms.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller looks again after kube's estimate (8 s) or at the
	// namespace's next change: make one.
	if _, err := nss.Patch(ctx, "team", types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var ours *corev1.Namespace
	waitUntil(t, "the namespace finalized by the controller", func(ctx context.Context) (bool, string, error) {
		ours, err = nss.Get(ctx, "team", metav1.GetOptions{})
		return err == nil && slices.Equal(ours.Spec.Finalizers, kubeNS.Spec.Finalizers), fmt.Sprintf("spec.finalizers %v, want %v", ours.Spec.Finalizers, kubeNS.Spec.Finalizers), err
	})
	if d := cmp.Diff(namespaceConditions(kubeNS), namespaceConditions(ours)); d != "" {
		t.Errorf("conditions once empty (-kube's +ours):\n%s", d)
	}

	bad := ours.DeepCopy()
	bad.Spec.Finalizers = []corev1.FinalizerName{"example.com/keep", "foo"}
	_, err = nss.Finalize(ctx, bad, metav1.UpdateOptions{})
	internal := func(fins ...core.FinalizerName) *core.Namespace {
		return &core.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", ResourceVersion: "1"}, Spec: core.NamespaceSpec{Finalizers: fins}}
	}
	wantErr := apierrors.NewInvalid(schema.GroupKind{Kind: "Namespace"}, "team",
		corevalidation.ValidateNamespaceFinalizeUpdate(internal("example.com/keep", "foo"), internal("example.com/keep")))
	if err == nil || err.Error() != wantErr.Error() {
		t.Errorf("Finalize with a bad name: %v, want %v", err, wantErr)
	}

	done := ours.DeepCopy()
	done.Spec.Finalizers = nil
	got, err := nss.Finalize(ctx, done, metav1.UpdateOptions{})
	if err != nil || got.Status.Phase != corev1.NamespaceTerminating || len(got.Spec.Finalizers) != 0 {
		t.Fatalf("Finalize: %v %v, want the namespace as updated", got, err)
	}
	if _, err := nss.Get(ctx, "team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace after its last finalizer: %v, want NotFound", err)
	}
}

// TestClientGoNamespaceDeletionPodsFirst: while a finalizer holds a pod
// of a namespace being deleted, nothing else in it is deleted and its
// conditions are those kube's deleter writes for the same content (every
// one fine: kube records only errors until the pods are gone).
func TestClientGoNamespaceDeletionPodsFirst(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync", "--namespace-deletion-grace-period=100ms")
	ctx := t.Context()
	cs := typedClientset(t, lw.URL)
	nss := cs.CoreV1().Namespaces()
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	// ServiceAccount admission waits for the namespace's default account.
	waitUntil(t, "the pod created", func(ctx context.Context) (bool, string, error) {
		pod, err = cs.CoreV1().Pods("team").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Finalizers: []string{"example.com/x"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err), nil
	})
	kube := deleteAsKube(t, nss, pod, cm)
	if _, err := kube.meta.Tracker().Get(configMapsGVR, "team", "c"); err != nil {
		t.Fatalf("kube's deleter deleted the ConfigMap while a pod remained: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("team").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap while a pod remains: %v, want it kept", err)
	}
}
