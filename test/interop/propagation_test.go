package interop

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	vfield "k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/listwatch/listwatch/internal/testwait"
)

// configMapStrategy is what kube's ConfigMap strategy does that a delete
// depends on: nothing graceful, no default garbage collection policy
// (pkg/registry/core/configmap/strategy.go); create and update as is.
type configMapStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

func (configMapStrategy) NamespaceScoped() bool                                            { return true }
func (configMapStrategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (configMapStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (configMapStrategy) Validate(context.Context, runtime.Object) vfield.ErrorList        { return nil }
func (configMapStrategy) WarningsOnCreate(context.Context, runtime.Object) []string        { return nil }
func (configMapStrategy) Canonicalize(runtime.Object)                                      {}
func (configMapStrategy) AllowCreateOnUpdate(context.Context) bool                         { return false }
func (configMapStrategy) AllowUnconditionalUpdate(context.Context) bool                    { return true }
func (configMapStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) vfield.ErrorList {
	return nil
}
func (configMapStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// kubeConfigMaps is kube-apiserver's generic registry for ConfigMaps, with
// garbage collection on as kube-apiserver runs it, over etcd: the
// reference the binary's deletes are compared with.
func kubeConfigMaps(t *testing.T) *genericregistry.Store {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codec := serializer.NewCodecFactory(scheme).LegacyCodec(corev1.SchemeGroupVersion)
	cfg := storagebackend.NewDefaultConfig("/kube-reference", codec)
	cfg.Transport.ServerList = RunEtcd(t).Endpoints()
	gr := corev1.Resource("configmaps")
	strategy := configMapStrategy{scheme, names.SimpleNameGenerator}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.ConfigMap{} },
		NewListFunc:               func() runtime.Object { return &corev1.ConfigMapList{} },
		DefaultQualifiedResource:  gr,
		SingularQualifiedResource: corev1.Resource("configmap"),
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(gr),
	}
	opts := generic.RESTOptions{
		StorageConfig: cfg.ForResource(gr), Decorator: generic.UndecoratedStorage,
		EnableGarbageCollection: true, DeleteCollectionWorkers: 1, ResourcePrefix: "configmaps",
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: opts}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Destroy)
	return store
}

// deleteAnswer is what a DELETE answered, reduced to what the policies
// decide: the status, whether the object went, and the marked object's
// finalizers and deletion fields.
type deleteAnswer struct {
	Code       int
	Deleted    bool
	Finalizers []string
	Marked     bool
	Grace      *int64
}

func answerOf(code int, obj runtime.Object) deleteAnswer {
	a := deleteAnswer{Code: code}
	switch o := obj.(type) {
	case *metav1.Status:
		a.Deleted = o.Status == metav1.StatusSuccess
	case *corev1.ConfigMap:
		a.Finalizers, a.Marked, a.Grace = o.Finalizers, o.DeletionTimestamp != nil, o.DeletionGracePeriodSeconds
	}
	return a
}

// TestClientGoDeletePropagation sends the same DELETEs, through client-go's
// typed clientset (protobuf), to the binary and to kube-apiserver's own
// registry (with its delete handler's status: 202 for an object left in
// place when orphanDependents=false), and expects the same answers and
// the same finalizers stored after each. The binary runs no garbage
// collector, as kube's registry here has none: the finalizers stay.
func TestClientGoDeletePropagation(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync", "--concurrent-gc-syncs", "0")
	ctx := t.Context()
	cs := typedClientset(t, lw.URL)
	kube := kubeConfigMaps(t)
	kctx := genericapirequest.WithNamespace(ctx, "default")

	policy := func(p metav1.DeletionPropagation) metav1.DeleteOptions {
		return metav1.DeleteOptions{PropagationPolicy: &p}
	}
	orphan := func(b bool) metav1.DeleteOptions { return metav1.DeleteOptions{OrphanDependents: &b} }
	dryRun := policy(metav1.DeletePropagationForeground)
	dryRun.DryRun = []string{metav1.DryRunAll}
	dryRunBg := policy(metav1.DeletePropagationBackground)
	dryRunBg.DryRun = []string{metav1.DryRunAll}
	fg, bg, or := policy(metav1.DeletePropagationForeground), policy(metav1.DeletePropagationBackground), policy(metav1.DeletePropagationOrphan)
	for i, tc := range []struct {
		name       string
		finalizers []string
		deletes    []metav1.DeleteOptions
	}{
		{"no policy", nil, []metav1.DeleteOptions{{}}},
		{"background", nil, []metav1.DeleteOptions{bg}},
		{"foreground", nil, []metav1.DeleteOptions{fg, {}}},
		{"orphan", nil, []metav1.DeleteOptions{or, {}}},
		{"orphanDependents", nil, []metav1.DeleteOptions{orphan(true), orphan(false)}},
		{"orphanDependents false", nil, []metav1.DeleteOptions{orphan(false)}},
		{"held, orphanDependents false", []string{"example.com/hold"}, []metav1.DeleteOptions{orphan(false), fg, orphan(false)}},
		{"orphan at create", []string{"orphan", "example.com/hold"}, []metav1.DeleteOptions{{}, fg, bg}},
		{"foreground at create", []string{"foregroundDeletion"}, []metav1.DeleteOptions{{}, or, fg, bg}},
		{"dry run", nil, []metav1.DeleteOptions{dryRun, fg, dryRun, bg}},
		{"dry run, held", []string{"orphan"}, []metav1.DeleteOptions{dryRun, or}},
		{"dry run dropping the finalizer", []string{"orphan"}, []metav1.DeleteOptions{dryRunBg}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("cm%d", i)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Finalizers: tc.finalizers}}
			if _, err := kube.Create(kctx, cm.DeepCopy(), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm.DeepCopy(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for j, opts := range tc.deletes {
				obj, deleted, err := kube.Delete(kctx, name, rest.ValidateAllObjectFunc, opts.DeepCopy())
				if err != nil {
					t.Fatalf("delete %d in kube's registry: %v", j, err)
				}
				code := http.StatusOK
				if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
					code = http.StatusAccepted
				}
				want := answerOf(code, obj)

				res := cs.CoreV1().RESTClient().Delete().Namespace("default").Resource("configmaps").Name(name).Body(&opts).Do(ctx)
				got, err := res.Get()
				if err != nil {
					t.Fatalf("delete %d: %v", j, err)
				}
				res.StatusCode(&code) // listwatch's, from here on
				if cm, ok := obj.(*corev1.ConfigMap); ok && deleted && len(opts.DryRun) > 0 {
					// kube's Store.Delete answers a dry run that would delete
					// once the finalizers change with the empty object its
					// update left (updateForGracefulDeletionAndFinalizers'
					// errDeleteNow); listwatch answers the Status of a delete.
					if cm.Name != "" {
						t.Fatalf("delete %d: kube answered %+v", j, cm)
					}
					want = deleteAnswer{Code: want.Code, Deleted: true}
				}
				if d := cmp.Diff(want, answerOf(code, got)); d != "" {
					t.Errorf("delete %d %+v: answer (-kube +listwatch):\n%s", j, opts, d)
				}
				kobj, kerr := kube.Get(kctx, name, &metav1.GetOptions{})
				lobj, lerr := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
				if d := cmp.Diff(storedFinalizers(t, kobj, kerr), storedFinalizers(t, lobj, lerr)); d != "" {
					t.Errorf("delete %d %+v: stored finalizers (-kube +listwatch):\n%s", j, opts, d)
				}
			}
		})
	}
}

// storedFinalizers is an object's finalizers, or "gone" when it was not found.
func storedFinalizers(t *testing.T, obj runtime.Object, err error) []string {
	t.Helper()
	if apierrors.IsNotFound(err) {
		return []string{"gone"}
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m.GetFinalizers()
}

// TestClientGoFinalizersValidation: the binary refuses orphan with
// foregroundDeletion, and a finalizer added to an object being deleted,
// with apimachinery's own validation errors.
func TestClientGoFinalizersValidation(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	ctx := t.Context()
	cms := typedClientset(t, lw.URL).CoreV1().ConfigMaps("default")
	fins := vfield.NewPath("metadata", "finalizers")
	invalid := func(errs vfield.ErrorList) *apierrors.StatusError {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "a", errs)
	}

	both := []string{metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents}
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: both}}, metav1.CreateOptions{})
	checkStatusError(t, err, invalid(validation.ValidateFinalizers(both, fins)))

	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	old, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	added := old.DeepCopy()
	added.Finalizers = append(added.Finalizers, "example.com/late", "example.com/early")
	_, err = cms.Update(ctx, added, metav1.UpdateOptions{})
	checkStatusError(t, err, invalid(validation.ValidateObjectMetaUpdate(&added.ObjectMeta, &old.ObjectMeta, vfield.NewPath("metadata"))))
}

// TestKubectlCascade runs cascadeScenario on a server without a garbage
// collector, so that the collector's finalizers stay for the test to see.
func TestKubectlCascade(t *testing.T) { eachKubectl(t, cascadeScenario, "--concurrent-gc-syncs", "0") }

// cascadeScenario: kubectl delete --cascade sends the propagation policy
// (kubectl's delete.go: PropagationPolicy from CascadingStrategy) and
// prints what it prints against kube-apiserver; the object is left held by
// the garbage collector's finalizer, and kubectl's wait for the deletion
// ends once the collector (here a patch) removes it.
func cascadeScenario(t *testing.T, k kubectl) {
	const cms = "/api/v1/namespaces/default/configmaps/"
	for _, tc := range []struct {
		cascade string
		fins    []any // nil: deleted at once
	}{
		{"background", nil},
		{"foreground", []any{"foregroundDeletion"}},
		{"orphan", []any{"orphan"}},
	} {
		name := "cascade-" + tc.cascade
		k.must(t, "create", "configmap", name)
		contains(t, k.must(t, "delete", "configmap", name, "--cascade="+tc.cascade, "--wait=false"), `configmap "`+name+`" deleted`)
		code, obj := getObject(t, k.server, cms+name)
		if tc.fins == nil {
			if code != http.StatusNotFound {
				t.Errorf("--cascade=%s: %d %v, want it deleted", tc.cascade, code, obj)
			}
			continue
		}
		if d := cmp.Diff(tc.fins, field(obj, "metadata", "finalizers")); code != http.StatusOK || d != "" || field(obj, "metadata", "deletionTimestamp") == nil {
			t.Errorf("--cascade=%s: %d, deletionTimestamp %v, finalizers (-want +got):\n%s", tc.cascade, code, field(obj, "metadata", "deletionTimestamp"), d)
		}
	}

	k.must(t, "create", "configmap", "waited")
	deleted := make(chan error, 1)
	var out string
	go func() {
		var err error
		out, err = k.run(t, nil, "delete", "configmap", "waited", "--cascade=foreground")
		deleted <- err
	}()
	testwait.Until(t, kubectlTimeout, "kubectl's delete to mark the object", func() bool {
		_, obj := getObject(t, k.server, cms+"waited")
		return field(obj, "metadata", "deletionTimestamp") != nil
	})
	k.must(t, "patch", "configmap", "waited", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	if err := <-deleted; err != nil { // kubectlTimeout bounds it
		t.Fatalf("kubectl delete --cascade=foreground: %v\n%s", err, out)
	}
	contains(t, out, `configmap "waited" deleted`)
}
