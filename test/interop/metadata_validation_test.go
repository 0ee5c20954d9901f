package interop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fld "k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// TestOwnerReferenceValidationDifferential writes ConfigMaps with
// ownerReferences through client-go (protobuf) to the binary, on create and
// on update, and compares the answer with kube's: apimachinery's own
// ValidateOwnerReferences, which kube-apiserver's ValidateObjectMeta and
// ValidateObjectMetaUpdate call for every kind, turned into the Status by
// NewInvalid.
func TestOwnerReferenceValidationDifferential(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cms := typedClientset(t, lw.URL).CoreV1().ConfigMaps("default")
	ctx := t.Context()
	owner := func(apiVersion, kind, name, uid string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid),
			Controller: controller, BlockOwnerDeletion: controller}
	}
	widget := owner("example.listwatch.io/v1", "Widget", "w", "1", ptr.To(true))
	cases := []struct {
		name string
		refs []metav1.OwnerReference
	}{
		{"controller", []metav1.OwnerReference{widget, owner("v1", "ConfigMap", "c", "2", nil)}},
		{"empty", []metav1.OwnerReference{{}}},
		{"apiVersion", []metav1.OwnerReference{owner("a/b/c", "K", "n", "1", nil), owner("apps/", "K", "n", "2", nil),
			owner("/", "K", "n", "3", nil), owner("/v1", "K", "n", "4", nil)}},
		{"event owner", []metav1.OwnerReference{owner("v1", "Event", "e", "1", ptr.To(false)), owner("/v1", "Event", "e", "2", nil),
			owner("events.k8s.io/v1", "Event", "e", "3", nil)}},
		{"two controllers", []metav1.OwnerReference{widget, owner("apps/v1", "ReplicaSet", "r", "2", ptr.To(true)),
			owner("v1", "ConfigMap", "c", "3", ptr.To(false)), owner("", "", "", "", ptr.To(true))}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := apimachineryvalidation.ValidateOwnerReferences(tc.refs, fld.NewPath("metadata", "ownerReferences"))
			name := fmt.Sprintf("owned-%d", i)
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: tc.refs}}, metav1.CreateOptions{})
			checkInvalid(t, "create", err, name, errs, true)

			// The same references on an update of a ConfigMap without any.
			// kube validates metadata on an update in several passes
			// (rest.BeforeUpdate's validateCommonFields runs
			// ValidateObjectMetaAccessor and ValidateObjectMetaAccessorUpdate,
			// the strategy its own), so its causes repeat each error; its
			// message, which ToAggregate deduplicates, is compared.
			name += "-updated"
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cm.OwnerReferences = tc.refs
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			checkInvalid(t, "update", err, name, errs, false)
		})
	}
}

// TestFinalizerNameValidationDifferential creates ConfigMaps with
// finalizers through client-go and compares the answer with kube's own
// ValidateFinalizers (which ValidateObjectMeta calls for every kind).
func TestFinalizerNameValidationDifferential(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cms := typedClientset(t, lw.URL).CoreV1().ConfigMaps("default")
	long := strings.Repeat("a", 64)
	for i, finalizers := range [][]string{
		{"example.listwatch.io/cleanup", "kubernetes", metav1.FinalizerDeleteDependents},
		{"Bad Finalizer!"},
		{"a/b/c", "/x", "x/", "Example.com/x"},
		{long, "example.com/" + long, strings.Repeat("a.", 127) + "a/x"},
	} {
		t.Run(strings.Join(finalizers, ","), func(t *testing.T) {
			errs := apimachineryvalidation.ValidateFinalizers(finalizers, fld.NewPath("metadata", "finalizers"))
			name := fmt.Sprintf("finalized-%d", i)
			_, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}, metav1.CreateOptions{})
			checkInvalid(t, "create", err, name, errs, true)
		})
	}
}

// checkInvalid checks that err is kube's 422 for a ConfigMap with errs (its
// message, and its causes if details), or nil if errs is empty.
func checkInvalid(t *testing.T, what string, err error, name string, errs fld.ErrorList, details bool) {
	t.Helper()
	if len(errs) == 0 {
		if err != nil {
			t.Errorf("%s: %v, want it accepted", what, err)
		}
		return
	}
	got, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("%s: %v, want a Status error", what, err)
	}
	want := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, name, errs).ErrStatus
	if diff := cmp.Diff(want.Message, got.Status().Message); diff != "" {
		t.Errorf("%s message (-kube +ours):\n%s", what, diff)
	}
	if !details {
		return
	}
	if diff := cmp.Diff(want.Details, got.Status().Details); diff != "" {
		t.Errorf("%s details (-kube +ours):\n%s", what, diff)
	}
}

// TestMetadataCauseOrderDifferential creates a ConfigMap whose
// ownerReferences and finalizers are both at fault (orphan and
// foregroundDeletion together among them) and compares the causes, in
// their order, with kube's own ValidateObjectMeta: the references', then
// each finalizer name's, then the two finalizers set together.
func TestMetadataCauseOrderDifferential(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cms := typedClientset(t, lw.URL).CoreV1().ConfigMaps("default")
	meta := metav1.ObjectMeta{Name: "faulty", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner"}},
		Finalizers:      []string{metav1.FinalizerOrphanDependents, "Bad Finalizer!", metav1.FinalizerDeleteDependents}}
	errs := apimachineryvalidation.ValidateObjectMeta(&meta, true, apimachineryvalidation.NameIsDNSSubdomain, fld.NewPath("metadata"))
	_, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
	checkInvalid(t, "create", err, meta.Name, errs, true)
}
