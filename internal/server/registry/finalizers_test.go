package registry

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// TestValidateFinalizerNamesShape: a finalizer that is not a string is one
// cause (kube's decoder would refuse it). The interop module compares the
// names' causes with kube's own ValidateFinalizers.
func TestValidateFinalizerNamesShape(t *testing.T) {
	obj := api.Object{"metadata": map[string]any{"name": "x", "finalizers": []any{"example.com/cleanup", 1.0}}}
	want := []api.StatusCause{{Type: api.CauseTypeFieldValueInvalid, Field: "metadata.finalizers", Message: "Invalid value: must be a list of strings"}}
	if diff := cmp.Diff(want, validateFinalizers(obj)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}

// TestValidateMetadataOrder: kube's ValidateObjectMetaAccessor reports the
// ownerReferences' causes, then ValidateFinalizers' (each name, then
// orphan and foregroundDeletion both set), so a client reading the first
// cause sees what kube-apiserver would say first.
func TestValidateMetadataOrder(t *testing.T) {
	configMaps := &resource.Resource{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true}
	obj := api.Object{"metadata": map[string]any{"name": "x", "namespace": "default",
		"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o"}},
		"finalizers":      []any{"orphan", "Bad!", "foregroundDeletion"}}}
	err := validate(t.Context(), configMaps, obj, nil)
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status.Details == nil {
		t.Fatalf("validate: %v, want a Status with details", err)
	}
	var got []string
	for _, c := range se.Status.Details.Causes {
		got = append(got, c.Field+": "+c.Message)
	}
	want := []string{
		"metadata.ownerReferences[0].uid: Required value: must not be empty",
		`metadata.finalizers: Invalid value: "Bad!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		`metadata.finalizers: Invalid value: ["orphan","Bad!","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}

// TestValidateFinalizersBounded: a body the server accepts holds hundreds
// of thousands of bad finalizer names; their causes (1.9 KB each, 371 MB
// for these), which the answer cuts to apierror.MaxCauses, are not all
// made.
func TestValidateFinalizersBounded(t *testing.T) {
	fins := make([]any, 200_000)
	for i := range fins {
		fins[i] = "-"
	}
	obj := api.Object{"metadata": map[string]any{"name": "x", "finalizers": fins}}
	boundedCauses(t, 4<<20, func() []api.StatusCause { return validateFinalizers(obj) })
}
